import { fileURLToPath } from 'node:url';
import { defineConfig, searchForWorkspaceRoot } from 'vite';

/** The domain's dependency-free modules the console imports (src/api/client.ts): the run states and kinds. */
const DOMAIN_MODULES = ['run-state.ts', 'run-kind.ts'].map((file) =>
  fileURLToPath(new URL(`../shared/domain/${file}`, import.meta.url)),
);

export default defineConfig({
  // Preact's automatic JSX runtime, without the Preact preset (its devtools and prefresh are not needed).
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    // Not `assets/`: local mode serves the site beside the API, whose `/assets` route is something else.
    assetsDir: 'static',
    target: 'es2022',
    sourcemap: false,
    // One stylesheet file keeps the CSP to style-src 'self' (no inline styles).
    cssCodeSplit: false,
  },
  server: {
    // The console's own tree, and those two files only: nothing else of the checkout is served.
    fs: { allow: [searchForWorkspaceRoot(process.cwd()), ...DOMAIN_MODULES] },
    // `npm run dev`: the API of a local mode started with `npm start` at the root.
    proxy: Object.fromEntries(
      ['/runs', '/targets', '/batches', '/assets', '/inventory', '/openapi.json', '/healthz'].map((p) => [
        p,
        process.env.REMOTE_WORKER_URL ?? 'http://127.0.0.1:8080',
      ]),
    ),
  },
});
