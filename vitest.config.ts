import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // The console's browser tests run after this suite: vitest.console.config.ts.
    include: ['test/**/*.test.ts'],
    // One temporary directory per run, removed at its end (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // e2e suites start real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
  },
});
