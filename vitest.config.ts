import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Minutes long (npm ci on a fresh clone): npm run test:clean-clone, a step of .ci/run of its own.
    exclude: [...configDefaults.exclude, "test/clean-clone/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
