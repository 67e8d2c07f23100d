import { defineConfig } from 'vitest/config';

/**
 * The console's browser tests, run after the main suite (`npm test`) rather than beside it: headless
 * Chromium, a local mode and ansible-playbook compete for two cores with the rest of the suite, and a
 * first page load there has taken longer than a minute. On their own they take about a minute.
 */
export default defineConfig({
  test: {
    include: ['console/test/**/*.test.ts'],
    // One temporary directory per run, removed at its end (test/support/temp-root.ts).
    globalSetup: ['test/support/temp-root.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
  },
});
