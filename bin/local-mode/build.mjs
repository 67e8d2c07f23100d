#!/usr/bin/env node
// `npm start`'s prestart: bundle local mode (bin/local.ts and what it imports of ours) into dist/local/ with
// esbuild, so `npm start` runs plain JavaScript instead of compiling TypeScript with tsx at every start.
// Rebuilt only when a source file it was built from changed (the inputs esbuild's metafile lists). Packages
// stay external: node_modules is loaded as it is (better-sqlite3's native addon; the cloud SDKs, which load
// only when configured). Code split, so a dynamic import() (AWS mode, the Kubernetes runner, the ECS task
// stand-in) stays a separate file that loads only when it is called. Plain .mjs: run as `node bin/local-mode/build.mjs`.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const outdir = join(root, 'dist/local');
const entry = join(outdir, 'local.mjs');
const metafile = join(outdir, 'meta.json');

/**
 * Loaded from node_modules as they are: the native addon, and the large SDKs local mode loads only when
 * configured (each sits behind a dynamic import(), so bundling them would only slow the build). The rest of
 * our dependencies (zod, yaml, middy, Powertools) are bundled: one file parses faster than hundreds.
 */
const EXTERNAL = [
  'better-sqlite3',
  '@aws-sdk/*',
  '@smithy/*',
  '@azure/*',
  '@google-cloud/*',
  'google-auth-library',
  '@kubernetes/client-node',
  'tsx',
  'esbuild',
];

/** True when the bundle exists and no file it was built from is newer than it. */
function isFresh() {
  if (!existsSync(entry) || !existsSync(metafile)) return false;
  const builtAt = statSync(entry).mtimeMs;
  let inputs;
  try {
    inputs = Object.keys(JSON.parse(readFileSync(metafile, 'utf8')).inputs);
  } catch {
    return false;
  }
  return inputs.every((input) => {
    const path = join(root, input);
    return existsSync(path) && statSync(path).mtimeMs <= builtAt;
  });
}

/**
 * `import.meta.url` and `import.meta.dirname` in our sources name paths beside them (the task shim, the
 * example playbooks, the built console): in a bundle they would name dist/local instead. Each becomes the
 * source file's own location, computed from the bundle's at run time, so the tree can move.
 */
const sourceLocations = {
  name: 'source-locations',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const text = await readFile(args.path, 'utf8');
      if (!text.includes('import.meta.url') && !text.includes('import.meta.dirname')) return undefined;
      const fromOut = (path) => JSON.stringify(relative(outdir, path));
      const url = `new URL(${fromOut(args.path)}, import.meta.url).href`;
      const dir = `decodeURIComponent(new URL(${fromOut(dirname(args.path))}, import.meta.url).pathname)`;
      return {
        contents: text.replaceAll(/import\.meta\.url\b/g, url).replaceAll(/import\.meta\.dirname\b/g, dir),
        loader: 'ts',
      };
    });
  },
};

export async function buildLocal({ force = false } = {}) {
  if (!force && isFresh()) return false;
  const { build } = await import('esbuild');
  // Chunk names carry content hashes: clear the last build's, or they pile up.
  await rm(outdir, { recursive: true, force: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { local: 'bin/local.ts' },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    external: EXTERNAL,
    // CommonJS dependencies (yaml) require() Node's built-ins: give the bundle a require, as build:relay does.
    inject: ['runners/shim/node-require.ts'],
    mainFields: ['module', 'main'],
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    plugins: [sourceLocations],
  });
  await writeFile(metafile, JSON.stringify(result.metafile));
  return true;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const built = await buildLocal({ force: process.argv.includes('--force') });
  if (built) process.stderr.write(`built ${relative(process.cwd(), entry)}\n`);
}
