import { defineConfig } from "vitest/config";

/** `npm run test:clean-clone`: time to first success on a fresh clone (test/clean-clone/), apart from `npm test`. */
export default defineConfig({
  test: {
    include: ["test/clean-clone/**/*.test.ts"],
    testTimeout: 1_200_000,
    hookTimeout: 60_000,
  },
});
