/**
 * Prints what a first load of the built console downloads: the JavaScript
 * index.html references (entry + modulepreloads), gzip- and brotli-compressed
 * as local mode serves them, and fails the build above the 150 KB budget.
 * Chunks loaded later (the YAML parser) are listed but not counted.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';

const DIST = resolve(import.meta.dirname, '../dist');
const BUDGET = 150 * 1024;

const html = readFileSync(join(DIST, 'index.html'), 'utf8');
const firstLoad = new Set(
  [...html.matchAll(/(?:src|href)="\/(static\/[^"]+\.(?:js|css))"/g)].map((m) => m[1] ?? ''),
);
let total = 0;
for (const name of readdirSync(join(DIST, 'static')).sort()) {
  const body = readFileSync(join(DIST, 'static', name));
  const gz = gzipSync(body, { level: 9 }).length;
  const br = brotliCompressSync(body).length;
  const initial = firstLoad.has(`static/${name}`);
  if (initial && name.endsWith('.js')) total += gz;
  process.stdout.write(
    `${initial ? 'first load' : 'on demand '}  ${name.padEnd(32)} ${String(body.length).padStart(8)} B  gzip ${String(gz).padStart(7)} B  br ${String(br).padStart(7)} B\n`,
  );
}
process.stdout.write(
  `first-load JavaScript, gzip: ${(total / 1024).toFixed(1)} KB (budget ${BUDGET / 1024} KB)\n`,
);
if (total > BUDGET) {
  process.stderr.write('the console is over its first-load budget\n');
  process.exit(1);
}
