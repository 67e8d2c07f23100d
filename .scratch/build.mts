import { build } from 'esbuild';
import { esbuildOptionsFor } from '../infra/bundling.ts';
const extra = process.argv[2] === 'fix';
const o = esbuildOptionsFor('/work/main/.scratch/entry.ts', '/tmp/gaxtest/out/index.mjs', {} as never);
if (extra) {
  o.banner = { js: `${o.banner?.js} import { fileURLToPath as __rwFileUrlToPath } from 'node:url'; import { dirname as __rwDirnameOf } from 'node:path'; const __rwFilename = __rwFileUrlToPath(import.meta.url); const __rwDirname = __rwDirnameOf(__rwFilename);` };
  o.define = { ...(o.define ?? {}), __dirname: '__rwDirname', __filename: '__rwFilename' };
}
await build({ ...o, absWorkingDir: '/work/main' });
