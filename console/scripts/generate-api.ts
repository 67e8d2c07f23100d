/**
 * Writes src/api/schema.d.ts from the OpenAPI document the API serves: the JSON text in
 * shared/http/openapi-document.ts, which `GET /openapi.json` answers with byte for byte (and which
 * test/unit/http/openapi-document.test.ts holds to the zod schemas). The console's client is then
 * typed by the contract it talks to, and cannot drift from it: the types are never checked in, and
 * `typecheck`, `build` and `dev` run this first.
 *
 * The file is rewritten only when its text changes, so a watching `vite` or editor sees no change
 * when there is none.
 *
 *   npm run generate --prefix console
 */
import { readFile, writeFile } from 'node:fs/promises';
import { OPENAPI_JSON } from '../../shared/http/openapi-document.ts';
import { apiTypes, SCHEMA_FILE } from './api-types.ts';

const generated = await apiTypes(OPENAPI_JSON);
const current = await readFile(SCHEMA_FILE, 'utf8').catch(() => undefined);
if (current === generated) {
  process.stdout.write(`${SCHEMA_FILE} is up to date\n`);
} else {
  await writeFile(SCHEMA_FILE, generated);
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
