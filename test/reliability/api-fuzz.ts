import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { noopExecutor } from '../../bench/support/noop-executor.ts';
import { type LocalMode, startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { REPO } from '../e2e/harness.ts';
import { type RawResponse, rawExchange } from '../support/raw-http.ts';
import { invalid, resolve, type Schema, type SchemaContext, valid } from './schema-arbitraries.ts';

/*
 * The API fuzz, shared by test/reliability/api-fuzz.test.ts (CI size) and
 * bench/reliability.ts (large size). Requests are drawn from the OpenAPI
 * document local mode serves at GET /openapi.json: for each operation, its
 * path, query, header and body schemas give valid values and values wrong in
 * one place; hand-written here is only what a schema cannot say — ids and
 * asset paths that exist, bad percent-escapes, bodies that are not JSON at
 * all, and content types.
 *
 * Each request goes over a raw socket (so a request target reaches the server
 * byte for byte, as a hostile client would send it) and is judged:
 * - no answer ≥ 500 (and always an answer);
 * - every 4xx is application/problem+json whose `status` is the answer's;
 * - a refusal (any 4xx) changed nothing: the SQLite file's runs, targets,
 *   idempotency keys, queue messages and log lines, and the asset directory,
 *   hash the same before and after.
 *
 * Accepted runs go to a no-op executor that ends them at once: the fuzz is
 * about the HTTP surface, and it needs the service idle before each request
 * so that a background step (dispatch, relay) is never mistaken for a change
 * caused by a refusal. After every accepted request the driver waits until no
 * run is active and no message is queued.
 */

export interface FuzzOptions {
  readonly requests: number;
  readonly seed: number;
  readonly progress?: (line: string) => void;
}

export interface FuzzFinding {
  readonly request: string;
  readonly status: number;
  readonly problem: string;
}

export interface FuzzResult {
  readonly requests: number;
  readonly byStatus: ReadonlyMap<number, number>;
  readonly byOperation: ReadonlyMap<string, number>;
  readonly findings: readonly FuzzFinding[];
  /** Accepted requests after which the service did not go idle within the wait. */
  readonly unsettled: number;
  /** 2xx answers after which the snapshot differed: proof that the snapshot sees a change at all. */
  readonly acceptedChanges: number;
  readonly durationMs: number;
}

interface FuzzRequest {
  readonly operation: string;
  readonly method: string;
  /** The request target; `{run}` and `{batch}` are replaced by an existing id when sent. */
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  /** Body bytes as a latin1 string (so invalid UTF-8 can be sent). */
  readonly body?: string;
}

const TOKEN = 'rw_fuzz_token_0123456789';
const TERMINAL = ['succeeded', 'failed', 'cancelled', 'timed_out', 'refused'];

/** Targets that exist before the fuzz starts, so valid submits can be accepted. */
const SEED_TARGETS: Record<string, unknown> = {
  'vm-local': { kind: 'vm', cloud: 'local', name: 'local vm', address: '127.0.0.1', connection: 'local' },
  'vm-aws': { kind: 'vm', cloud: 'aws', name: 'aws vm', address: '10.0.0.1' },
  'k8s-local': { kind: 'cluster', cloud: 'local', name: 'k3s', provider: 'k3s', credentialsRef: 'kc' },
  'db-local': {
    kind: 'database',
    cloud: 'local',
    name: 'pg',
    engine: 'postgresql',
    endpoint: { host: '127.0.0.1', port: 5432 },
    source: 'provisioned',
  },
};
const SEED_ASSETS = ['hello/site.yml', 'fuzz/play.yml'];

/** Percent-escapes and ids a router or decoder could choke on (issue 14's findings and their kin). */
const HOSTILE_IDS = [
  '%ZZ',
  '%FF',
  '%C0%AF',
  '%E0%80%80',
  '%ED%A0%80',
  '%00',
  '%',
  '%2',
  '%2F',
  '..',
  '.',
  '%2e%2e',
  'a%20b',
  '%F0%9F%98%80',
  '\u00ff',
  'x'.repeat(129),
  'x'.repeat(5000),
  '-lead',
  'a;b',
  'a?b=c',
];

/** A drawn value as it would appear in a URL or header. */
const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** Percent-encode the UTF-8 bytes of a drawn value (encodeURIComponent throws on a lone surrogate). */
const escapeText = (v: unknown): string =>
  [...Buffer.from(asText(v), 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');

const latin1 = (text: string) => Buffer.from(text, 'utf8').toString('latin1');

/** Bodies that are not the JSON the route wants at all, as bytes (latin1 strings). */
const brokenBody = fc.oneof(
  fc
    .constantFrom(
      '',
      '{',
      '{"kind":',
      '{"kind":"vm",}',
      "{'kind':'vm'}",
      '{"kind":NaN}',
      '{"a":1}{"b":2}',
      'null',
      '[]',
      '"string"',
      '42',
      'true',
      '\ufeff{"kind":"vm"}',
      '{"kind":"vm","kind":"k8s_op"}',
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      '{"s":"\\ud800"}',
      '{"s":"\\u00"}',
    )
    .map(latin1),
  // Nested past any sane depth limit; both objects and arrays.
  fc.integer({ min: 33, max: 20_000 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 33, max: 20_000 }).map((n) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`),
  // Not UTF-8: these strings are the bytes themselves.
  fc.constantFrom('{"kind":"\xff\xfe"}', '\xc0\xaf', '{"a":"\xed\xa0\x80"}'),
  fc.string({ maxLength: 40 }).map(latin1),
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/problem+json',
  ';;;',
  '',
];

/** A query-string value: valid for its schema, invalid, or a broken escape. */
function queryValue(schema: Schema, ctx: SchemaContext): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: valid(schema, ctx).map((v) => escapeText(v)) },
    invalid(schema, ctx).map((v) => escapeText(v)),
    fc.constantFrom('%ZZ', '%', '%C0%AF', '%FF', '', '%00', 'a&b', '1e3', '-1', '0x10', '１'),
  );
}

function operationArb(
  path: string,
  method: string,
  op: Schema,
  ctx: SchemaContext,
): fc.Arbitrary<FuzzRequest> {
  const params: Schema[] = (op.parameters ?? []).map((p: Schema) => resolve(p, ctx.doc));
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const headerParams = params.filter((p) => p.in === 'header');
  const operation = `${method.toUpperCase()} ${path}`;

  const segment = (p: Schema): fc.Arbitrary<string> => {
    const existing =
      p.name === 'id' && path.startsWith('/runs')
        ? fc.constant('{run}')
        : p.name === 'id' && path.startsWith('/batches')
          ? fc.constant('{batch}')
          : fc.constantFrom(...Object.keys(SEED_TARGETS));
    return fc.oneof(
      { weight: 3, arbitrary: existing },
      { weight: 2, arbitrary: valid(p.schema ?? {}, ctx).map((v) => escapeText(v)) },
      { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_IDS) },
      fc.string({ maxLength: 20 }).map(escapeText),
    );
  };
  const pathArb = fc
    .tuple(...pathParams.map(segment))
    .map((values) => pathParams.reduce((acc, p, i) => acc.replace(`{${p.name}}`, values[i] as string), path));

  const queryArb = fc
    .tuple(
      ...queryParams.map((p) =>
        fc.option(
          queryValue(p.schema ?? {}, ctx).map((v) => `${p.name}=${v}`),
          { nil: undefined },
        ),
      ),
      // Parameters the route does not know, repeated ones and broken pairs.
      fc.option(
        fc.constantFrom('unknown=1', 'limit=1&limit=2', '&&', '=', 'a=%ZZ', `${'k'.repeat(3000)}=v`, '%ZZ=1'),
        {
          nil: undefined,
          freq: 4,
        },
      ),
    )
    .map((parts) => parts.filter((p) => p !== undefined).join('&'));

  const headerArb = fc
    .tuple(
      ...headerParams.map((p) =>
        fc.option(
          fc
            .oneof(valid(p.schema ?? {}, ctx), invalid(p.schema ?? {}, ctx))
            .map((v) => [p.name as string, asText(v).replace(/[\r\n]/g, '')] as const),
          { nil: undefined },
        ),
      ),
    )
    .map((hs) => hs.filter((h) => h !== undefined));

  const content = op.requestBody?.content?.['application/json']?.schema;
  const bodyArb: fc.Arbitrary<{ body?: string; type?: string }> =
    content === undefined
      ? fc.oneof(
          { weight: 4, arbitrary: fc.constant({}) },
          brokenBody.map((body) => ({ body, type: 'application/json' })),
        )
      : fc
          .tuple(
            fc.oneof(
              { weight: 3, arbitrary: valid(content, ctx).map((v) => latin1(JSON.stringify(v))) },
              {
                weight: 4,
                arbitrary: invalid(content, ctx).map((v) => latin1(JSON.stringify(v) ?? 'undefined')),
              },
              { weight: 2, arbitrary: brokenBody },
            ),
            fc.oneof(
              { weight: 8, arbitrary: fc.constant('application/json') },
              fc.constantFrom(...CONTENT_TYPES),
            ),
          )
          .map(([body, type]) => ({ body, type }));

  return fc.tuple(pathArb, queryArb, headerArb, bodyArb).map(([p, query, headers, { body, type }]) => ({
    operation,
    method: method.toUpperCase(),
    target: query === '' ? p : `${p}?${query}`,
    headers: [...headers, ...(type === undefined || type === '' ? [] : [['content-type', type] as const])],
    ...(body === undefined ? {} : { body }),
  }));
}

/** Every operation of the document, and now and then a method the path does not have. */
export function requestArbitrary(doc: Schema, known: SchemaContext['known']): fc.Arbitrary<FuzzRequest> {
  const ctx: SchemaContext = { doc, known };
  const operations: fc.Arbitrary<FuzzRequest>[] = [];
  for (const [path, item] of Object.entries<Schema>(doc.paths)) {
    for (const [method, op] of Object.entries<Schema>(item)) {
      if (!['get', 'put', 'post', 'delete', 'patch'].includes(method)) continue;
      operations.push(operationArb(path, method, op, ctx));
    }
  }
  const wrongMethod = fc
    .tuple(
      fc.constantFrom(...operations),
      fc.constantFrom('PATCH', 'OPTIONS', 'TRACE', 'FOO', 'DELETE', 'PUT'),
    )
    .chain(([op, method]) =>
      op.map((r) => ({ ...r, operation: `${method} (wrong) ${r.operation}`, method })),
    );
  return fc.oneof({ weight: 12, arbitrary: fc.oneof(...operations) }, wrongMethod);
}

/** Everything a request could change, hashed: the database's rows and the asset tree. */
function snapshot(db: Database.Database, assetRoot: string): string {
  const parts: string[] = [];
  let hash = createHash('sha256');
  for (const [table, order] of [
    ['runs', 'id'],
    ['targets', 'id'],
    ['idempotency_keys', 'key'],
    ['messages', 'seq'],
    ['log_lines', 'run_id, seq'],
  ] as const) {
    for (const row of db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).iterate()) {
      hash.update(JSON.stringify(row));
    }
    parts.push(`${table}:${hash.digest('hex').slice(0, 12)}`);
    hash = createHash('sha256');
  }
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else hash.update(`${relative(assetRoot, path)} ${st.size} ${st.mtimeMs}\n`);
    }
  };
  walk(assetRoot);
  parts.push(`assets:${hash.digest('hex').slice(0, 12)}`);
  return parts.join(' ');
}

/** The parts of two snapshots that differ, by name. */
const changed = (before: string, after: string) => {
  const was = new Set(before.split(' '));
  return after
    .split(' ')
    .filter((part) => !was.has(part))
    .map((part) => part.split(':')[0])
    .join(', ');
};

const idle = (db: Database.Database) => {
  const active = db
    .prepare(`SELECT count(*) AS n FROM runs WHERE state NOT IN (${TERMINAL.map(() => '?').join(',')})`)
    .get(...TERMINAL) as { n: number };
  const queued = db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number };
  return active.n === 0 && queued.n === 0;
};

function describeRequest(r: FuzzRequest, target: string): string {
  const body = r.body === undefined ? '' : ` body(${r.body.length}B)=${JSON.stringify(r.body.slice(0, 200))}`;
  return `${r.method} ${target.slice(0, 300)} ${JSON.stringify(r.headers)}${body}`;
}

export async function apiFuzz(options: FuzzOptions): Promise<FuzzResult> {
  const say = options.progress ?? (() => {});
  const dataDir = mkdtempSync(join(tmpdir(), 'rw-fuzz-'));
  const assetRoot = join(dataDir, 'assets');
  for (const asset of SEED_ASSETS) {
    mkdirSync(join(assetRoot, asset, '..'), { recursive: true });
    writeFileSync(join(assetRoot, asset), '- hosts: all\n  gather_facts: false\n  tasks: []\n');
  }
  const started = performance.now();
  let local: LocalMode | undefined;
  let db: Database.Database | undefined;
  try {
    local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: dataDir,
        REMOTE_WORKER_TOKEN: TOKEN,
        LOCAL_STORAGE_PATH: assetRoot,
        LOG_LEVEL: 'CRITICAL',
        PATH: process.env.PATH,
      },
      executor: noopExecutor(),
    });
    const port = Number(new URL(local.url).port);
    const base = local.url;
    const auth = { authorization: `Bearer ${TOKEN}` };
    db = new Database(join(dataDir, 'remote-worker.db'), { readonly: true, fileMustExist: true });

    const doc = (await (await fetch(`${base}/openapi.json`)).json()) as Schema;
    const putSeeds = async () => {
      for (const [id, body] of Object.entries(SEED_TARGETS)) {
        const res = await fetch(`${base}/targets/${id}`, {
          method: 'PUT',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (res.status >= 300) throw new Error(`seed target ${id}: ${res.status} ${await res.text()}`);
      }
    };
    await putSeeds();
    // One run and one batch to aim the {id} routes at.
    const run = await fetch(`${base}/runs`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'vm', targetId: 'vm-local', asset: 'hello/site.yml' }),
    });
    const batch = await fetch(`${base}/batches`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'vm', targetIds: ['vm-local', 'vm-aws'], asset: 'hello/site.yml' }),
    });
    const runIds: string[] = [((await run.json()) as { id: string }).id];
    const batchIds: string[] = [((await batch.json()) as { batchId: string }).batchId];

    const known = {
      targetId: fc.constantFrom(...Object.keys(SEED_TARGETS)),
      targetIds: fc.subarray(Object.keys(SEED_TARGETS), { minLength: 1 }),
      asset: fc.constantFrom(...SEED_ASSETS),
      // Uploads go under one folder so they never overwrite the assets the submits name.
      path: fc.stringMatching(/^[a-z]{1,8}\.yml$/).map((name) => `up/${name}`),
    };
    const requests = requestArbitrary(doc, known);

    const byStatus = new Map<number, number>();
    const byOperation = new Map<string, number>();
    const findings: FuzzFinding[] = [];
    let unsettled = 0;
    let acceptedChanges = 0;
    let sent = 0;
    let pick = 0;

    const waitIdle = async () => {
      const until = Date.now() + 10_000;
      while (!idle(db as Database.Database)) {
        if (Date.now() > until) return false;
        await sleep(5);
      }
      return true;
    };

    const exchange = async (r: FuzzRequest): Promise<{ response: RawResponse; target: string }> => {
      pick += 1;
      const target = r.target
        .replaceAll('{run}', runIds[pick % runIds.length] ?? 'none')
        .replaceAll('{batch}', batchIds[pick % batchIds.length] ?? 'none');
      const headers = [
        `${r.method} ${target} HTTP/1.1`,
        'host: 127.0.0.1',
        'connection: close',
        `authorization: Bearer ${TOKEN}`,
        ...r.headers.map(([k, v]) => `${k}: ${v}`),
        ...(r.body === undefined ? [] : [`content-length: ${Buffer.byteLength(r.body, 'latin1')}`]),
      ];
      const { response } = await rawExchange(port, `${headers.join('\r\n')}\r\n\r\n${r.body ?? ''}`, {
        timeoutMs: 15_000,
      });
      return { response, target };
    };

    const judge = async (r: FuzzRequest) => {
      // Work an earlier request started (a dispatch, the relay) must not be taken for this one's doing.
      if (!(await waitIdle())) unsettled += 1;
      const before = snapshot(db as Database.Database, assetRoot);
      const { response, target } = await exchange(r);
      sent += 1;
      const status = response.status;
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
      byOperation.set(r.operation, (byOperation.get(r.operation) ?? 0) + 1);
      const problems: string[] = [];
      if (!(status >= 100 && status < 500)) problems.push(`answered ${status || 'nothing'}`);
      if (status >= 400 && status < 500) {
        if (response.headers['content-type'] !== 'application/problem+json')
          problems.push(`4xx with content-type ${response.headers['content-type']}`);
        if (response.json?.status !== status || typeof response.json?.type !== 'string')
          problems.push(`4xx body is not a problem for ${status}: ${response.body.slice(0, 200)}`);
        const after = snapshot(db as Database.Database, assetRoot);
        if (after !== before)
          problems.push(`a refused request changed the stored state: ${changed(before, after)}`);
      }
      for (const problem of problems) findings.push({ request: describeRequest(r, target), status, problem });
      if (status >= 200 && status < 300) {
        if (typeof response.json?.id === 'string') runIds.push(response.json.id);
        if (typeof response.json?.batchId === 'string') batchIds.push(response.json.batchId);
        await waitIdle();
        if (snapshot(db as Database.Database, assetRoot) !== before) acceptedChanges += 1;
        // A DELETE or PUT may have removed or reshaped a seed target; put them back so submits stay acceptable.
        if (r.method === 'DELETE' || r.method === 'PUT') await putSeeds();
        await waitIdle();
      }
      if (sent % 500 === 0) say(`${sent}/${options.requests} requests, ${findings.length} findings`);
    };

    await fc.assert(
      fc.asyncProperty(requests, async (r) => {
        await judge(r);
      }),
      // Every request is judged and recorded; a finding never stops the run, so nothing is shrunk.
      { numRuns: options.requests, seed: options.seed, endOnFailure: true },
    );

    return {
      requests: sent,
      byStatus,
      byOperation,
      findings,
      unsettled,
      acceptedChanges,
      durationMs: performance.now() - started,
    };
  } finally {
    db?.close();
    await local?.close({ drainMs: 0 });
    rmSync(dataDir, { recursive: true, force: true });
  }
}
