import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // console/test: the browser tests, beside console/node_modules (playwright-core, axe-core).
    include: ['test/**/*.test.ts', 'console/test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // e2e suites start real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});
