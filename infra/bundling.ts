import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/**
 * How every Lambda handler is bundled — one definition read by the stack
 * (NodejsFunction) and by bench/lambda-bundles.ts (esbuild directly), so the
 * figures the bench prints are for the bundles that deploy.
 *
 * - ESM output (`.mjs`): top-level await and static imports that esbuild can
 *   tree-shake, so each function carries only the SDK clients it imports.
 * - The banner gives CommonJS dependencies bundled into ESM a `require` for
 *   Node built-ins (without it, `require('node:crypto')` inside a bundled CJS
 *   module throws "Dynamic require of … is not supported").
 * - `@aws-sdk/*` is bundled, not left to the runtime: the versions deployed
 *   are the ones in package-lock.json that the moto tests ran against, not
 *   whatever the nodejs22.x runtime ships that month; and a bundled, minified
 *   client loads from one file instead of resolving hundreds of modules.
 * - No source maps: `--enable-source-maps` costs cold-start time on every
 *   invocation, and Powertools logs the error message and name either way.
 */
export const LAMBDA_NODE_TARGET = 'node22';

export const ESM_REQUIRE_BANNER =
  "import { createRequire as __rwCreateRequire } from 'node:module'; const require = __rwCreateRequire(import.meta.url);";

/** ESM packages first: esbuild tree-shakes them, where a `main` (CJS) build would come in whole. */
export const MAIN_FIELDS = ['module', 'main'];

/**
 * Compile-time constants of a handler's bundle. Functions that never touch a
 * runner task get `process.env.RW_CLOUD_SDKS = "none"`: the composition root
 * (shared/composition/launchers.ts, `cloudSdks`) tests it once, around every
 * loader of the ACI, Cloud Run and Kubernetes SDKs, so esbuild drops that code
 * from their bundle.
 */
export const bundleDefines = (spec: {
  readonly controlsTasks?: boolean;
  readonly discoversVms?: boolean;
}): Record<string, string> => ({
  ...(spec.controlsTasks === true ? {} : { 'process.env.RW_CLOUD_SDKS': JSON.stringify('none') }),
  // The same for the VM-listing SDKs (shared/composition/discovery.ts, `discoverySdks`).
  ...(spec.discoversVms === true ? {} : { 'process.env.RW_DISCOVERY_SDKS': JSON.stringify('none') }),
});

export const lambdaBundling: BundlingOptions = {
  format: OutputFormat.ESM,
  target: LAMBDA_NODE_TARGET,
  minify: true,
  sourceMap: false,
  mainFields: MAIN_FIELDS,
  banner: ESM_REQUIRE_BANNER,
  bundleAwsSDK: true,
  externalModules: [],
  forceDockerBundling: false,
};

/**
 * The esbuild build options equivalent to `lambdaBundling` (what NodejsFunction
 * passes on its esbuild command line), for tools that call esbuild themselves.
 */
export const esbuildOptionsFor = (
  entry: string,
  outfile: string,
  spec: { readonly controlsTasks?: boolean; readonly discoversVms?: boolean } = {},
): BuildOptions => ({
  entryPoints: [entry],
  outfile,
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
