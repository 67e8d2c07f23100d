/**
 * Writes shared/http/openapi-document.ts: the OpenAPI document that
 * shared/http/openapi.ts builds from the zod schemas, as the JSON text
 * `GET /openapi.json` serves. The GetOpenapi function then answers with a
 * string instead of loading zod and building the document on its cold start
 * (about 60 ms of it).
 *
 * `--check` writes nothing and exits 1 when the checked-in module is stale;
 * test/unit/http/openapi-document.test.ts fails the same way, so a schema
 * change nobody regenerated for does not ship.
 *
 *   npm run generate:openapi
 */
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { openApiDocumentModule } from '../shared/http/openapi-module.ts';

const OUT = resolve(import.meta.dirname, '../shared/http/openapi-document.ts');
const generated = openApiDocumentModule();

const checking = process.argv.includes('--check');
const upToDate = (await readFile(OUT, 'utf8').catch(() => '')) === generated;
if (!checking) await writeFile(OUT, generated);
process.stdout.write(checking ? '' : `wrote ${OUT}\n`);
// With --check, nothing is written: a stale module fails the run as it fails the test.
if (checking && !upToDate) {
  process.stderr.write('shared/http/openapi-document.ts is stale: run `npm run generate:openapi`\n');
  process.exitCode = 1;
}
