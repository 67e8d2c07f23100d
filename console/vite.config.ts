import { defineConfig } from 'vite';

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
    // `npm run dev`: the API of a local mode started with `npm start` at the root.
    proxy: Object.fromEntries(
      ['/runs', '/targets', '/batches', '/assets', '/inventory', '/openapi.json', '/healthz'].map((p) => [
        p,
        process.env.REMOTE_WORKER_URL ?? 'http://127.0.0.1:8080',
      ]),
    ),
  },
});
