import { configDefaults, defineConfig } from "vitest/config";

/**
 * Vite's server conditions (its defaultServerConditions) with "psd2-gateway-source" first: the workspace
 * packages (packages/*) and the gateway's exports they import resolve to their TypeScript sources,
 * as tsconfig.json's customConditions does, so the tests need no build of them. A process a test
 * spawns from the sources (`node --import tsx src/main.ts`) passes the same to Node:
 * --conditions=psd2-gateway-source; one that runs dist/ does not.
 */
const SOURCE_CONDITIONS = ["psd2-gateway-source", "module", "node", "development|production"];

export default defineConfig({
  resolve: { conditions: SOURCE_CONDITIONS },
  ssr: { resolve: { conditions: SOURCE_CONDITIONS } },
  test: {
    include: ["test/**/*.test.ts", "packages/*/test/**/*.test.ts"],
    // Minutes long (npm ci on a fresh clone): npm run test:clean-clone, a step of .ci/run of its own.
    exclude: [...configDefaults.exclude, "test/clean-clone/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
