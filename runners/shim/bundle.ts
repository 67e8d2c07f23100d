import { join } from 'node:path';
import { type BuildOptions, buildSync } from 'esbuild';

/**
 * How the task shim is bundled — one definition for every place that builds
 * it: `npm run build:shim` (its command line is {@link SHIM_ESBUILD_ARGS},
 * test/runners/shim-entrypoint.test.ts keeps the two equal), the CDK stack
 * staging the runner images' build context, and the image tests. The bundle
 * is plain JavaScript with no dependency outside Node (the Secrets Manager
 * client is bundled in, loaded only when a run's own secrets are fetched), built once on the host
 * and copied into every image and architecture (the Dockerfiles'
 * `COPY dist/shim.mjs /opt/remote-worker/shim.mjs`).
 *
 * @example
 * bundleShim(repoRoot, join(contextDir, SHIM_BUNDLE));
 */
export const SHIM_ENTRY = 'runners/shim/main.ts';
/** Where `npm run build:shim` writes the bundle, relative to the repository root; the Dockerfiles copy it from there. */
export const SHIM_BUNDLE = 'dist/shim.mjs';
/** Gives CommonJS dependencies bundled into the ES module a `require` for Node built-ins. */
const SHIM_REQUIRE_SHIM = 'runners/shim/node-require.ts';
/** Node 22.19 is the oldest runtime the images carry (AbortSignal.any, fetch). */
const SHIM_TARGET = 'node22';

export const SHIM_ESBUILD_ARGS: readonly string[] = [
  SHIM_ENTRY,
  '--bundle',
  '--platform=node',
  '--format=esm',
  `--target=${SHIM_TARGET}`,
  // The AWS SDK (read per-run secrets, secret-fetch.ts): its ESM builds, and a `require` for CJS dependencies.
  '--main-fields=module,main',
  `--inject:${SHIM_REQUIRE_SHIM}`,
  `--outfile=${SHIM_BUNDLE}`,
];

export const shimBuildOptions = (repoRoot: string, outfile: string): BuildOptions => ({
  absWorkingDir: repoRoot,
  entryPoints: [SHIM_ENTRY],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: SHIM_TARGET,
  mainFields: ['module', 'main'],
  inject: [SHIM_REQUIRE_SHIM],
  outfile,
  logLevel: 'warning',
});

/** Bundle the shim to `outfile` (default: the repository's dist/shim.mjs); synchronous, about 100 ms. */
export function bundleShim(repoRoot: string, outfile: string = join(repoRoot, SHIM_BUNDLE)): string {
  buildSync(shimBuildOptions(repoRoot, outfile));
  return outfile;
}
