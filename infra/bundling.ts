import { basename, dirname } from 'node:path';
import type { BuildOptions } from 'esbuild';

/**
 * How every Lambda handler is bundled — one definition read by the stack
 * (infra/constructs/handler-function.ts, which calls esbuild in its local
 * bundling) and by bench/lambda-bundles.ts, so the figures the bench prints
 * are for the bundles that deploy.
 *
 * - ESM output (`.mjs`): top-level await and static imports that esbuild can
 *   tree-shake, so each function carries only the SDK clients it imports.
 * - The banner gives CommonJS dependencies bundled into ESM a `require` for
 *   Node built-ins (without it, `require('node:crypto')` inside a bundled CJS
 *   module throws "Dynamic require of … is not supported"), and a module
 *   path for those that read `__dirname`/`__filename` at load (google-gax,
 *   under the Cloud Run and GCE clients: "__dirname is not defined" in ESM).
 *   The bundle's own names (`__rwDirname`, `__rwFilename`) stand in for them
 *   through `define`, which replaces only free uses, so a module that
 *   declares its own `__dirname` (@azure/storage-common does) keeps it.
 * - `@aws-sdk/*` is bundled, not left to the runtime: the versions deployed
 *   are the ones in package-lock.json that the moto tests ran against, not
 *   whatever the nodejs22.x runtime ships that month; and a bundled, minified
 *   client loads from a few files instead of resolving hundreds of modules.
 * - No source maps: `--enable-source-maps` costs cold-start time on every
 *   invocation, and Powertools logs the error message and name either way.
 */
export const LAMBDA_NODE_TARGET = 'node22';

export const ESM_REQUIRE_BANNER =
  "import { createRequire as __rwCreateRequire } from 'node:module'; const require = __rwCreateRequire(import.meta.url);" +
  " import { fileURLToPath as __rwFileUrlToPath } from 'node:url'; import { dirname as __rwDirnameOf } from 'node:path';" +
  ' const __rwFilename = __rwFileUrlToPath(import.meta.url); const __rwDirname = __rwDirnameOf(__rwFilename);';

/** Free uses of the CommonJS module path, answered by the banner's names. */
const MODULE_PATH_DEFINES = { __dirname: '__rwDirname', __filename: '__rwFilename' };

/** ESM packages first: esbuild tree-shakes them, where a `main` (CJS) build would come in whole. */
export const MAIN_FIELDS = ['module', 'main'];

/** What decides a handler's bundle beyond its entry: which SDK loaders it keeps (`bundleDefines`). */
export interface BundleSpec {
  readonly controlsTasks?: boolean;
  readonly discoversVms?: boolean;
}

/**
 * Compile-time constants of a handler's bundle. Functions that never touch a
 * runner task get `process.env.RW_CLOUD_SDKS = "none"`: the composition root
 * (shared/composition/launchers.ts, `cloudSdks`) tests it once, around every
 * loader of the ACI, Cloud Run and Kubernetes SDKs, so esbuild drops that code
 * from their bundle.
 */
export const bundleDefines = (spec: BundleSpec): Record<string, string> => ({
  ...MODULE_PATH_DEFINES,
  ...(spec.controlsTasks === true ? {} : { 'process.env.RW_CLOUD_SDKS': JSON.stringify('none') }),
  // The same for the VM-listing SDKs (shared/composition/discovery.ts, `discoverySdks`).
  ...(spec.discoversVms === true ? {} : { 'process.env.RW_DISCOVERY_SDKS': JSON.stringify('none') }),
});

/** Where the chunks shared by an entry and its dynamic imports go, beside the entry file (`index.mjs`). */
export const CHUNK_NAMES = 'chunks/[name]-[hash]';

/**
 * The esbuild build options of every Lambda handler: the stack's local
 * bundling (infra/constructs/handler-function.ts) and the tools that build the
 * bundles themselves (bench/lambda-bundles.ts, test/infra) all call this.
 *
 * Code-split ESM (`splitting: true`): every dynamic `import()` — the
 * function kind's composition, the ACI, Cloud Run and Kubernetes SDKs behind
 * `cloudSdks`, per-run secrets at submit — becomes a chunk under `chunks/`
 * that Node loads only when the code path runs, so the entry file holds only
 * what the handler needs before its first call (without splitting, esbuild
 * inlines every dynamic import into the one output file). `outfile` names the
 * entry file; its directory is the function's asset directory and gets the
 * chunks too. NodejsFunction cannot split (it passes esbuild `--outfile`),
 * which is why the stack bundles with esbuild itself.
 */
export const esbuildOptionsFor = (entry: string, outfile: string, spec: BundleSpec = {}): BuildOptions => ({
  entryPoints: [entry],
  outdir: dirname(outfile),
  entryNames: basename(outfile).replace(/\.m?js$/, ''),
  outExtension: { '.js': '.mjs' },
  chunkNames: CHUNK_NAMES,
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: LAMBDA_NODE_TARGET,
  minify: true,
  sourcemap: false,
  mainFields: MAIN_FIELDS,
  banner: { js: ESM_REQUIRE_BANNER },
  define: bundleDefines(spec),
  logLevel: 'warning',
});
