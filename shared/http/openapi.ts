import { z } from 'zod';
import type { RouteKey } from '../../functions/api/routes.ts';
import { MAX_ASSET_BYTES } from '../app/assets.ts';
import { MAX_BATCH_TARGETS } from '../domain/batch.ts';
import type { ErrorCode } from '../domain/errors.ts';
import { TargetBodySchema } from '../domain/target.ts';
import { DiscoverySnapshotSchema } from './discovery-schemas.ts';
import { PROBLEM_KINDS, problemType } from './problem.ts';
import {
  AssetListSchema,
  AssetUploadedSchema,
  BatchRollupSchema,
  BatchSubmittedSchema,
  HealthSchema,
  InventorySchema,
  LogPageSchema,
  OpenApiSchema,
  ProblemSchema,
  RunListSchema,
  RunSchema,
  RunTimings,
  TargetListSchema,
  TargetSchema,
  Timestamp,
} from './response-schemas.ts';
import {
  IdParams,
  ListRunsQuery,
  LogsQuery,
  SubmitBatchBody,
  SubmitRunBody,
  TargetIdParams,
  UploadAssetBody,
} from './schemas.ts';

/**
 * The OpenAPI 3.1 document, generated from the zod schemas the handlers
 * validate with (request bodies, path and query parameters) and the response
 * schemas in response-schemas.ts. `ROUTE_DOCS` must name every route of
 * functions/api/routes.ts — the compiler checks that — and the test checks
 * the document against the live routes.
 *
 * Request bodies are documented as the server enforces them (unknown fields
 * refused); response objects are open (`additionalProperties` unset), since
 * adding a field to an answer is not a breaking change.
 */

const REQUESTS = {
  SubmitRunRequest: SubmitRunBody,
  SubmitBatchRequest: SubmitBatchBody,
  TargetBody: TargetBodySchema,
  UploadAssetRequest: UploadAssetBody,
} satisfies Record<string, z.ZodType>;

/** Response components by name; exported so the contract test can parse live answers with them. */
export const RESPONSES = {
  Run: RunSchema,
  RunTimings,
  RunList: RunListSchema,
  LogPage: LogPageSchema,
  Target: TargetSchema,
  TargetList: TargetListSchema,
  Inventory: InventorySchema,
  DiscoverySnapshot: DiscoverySnapshotSchema,
  BatchSubmitted: BatchSubmittedSchema,
  BatchRollup: BatchRollupSchema,
  AssetList: AssetListSchema,
  AssetUploaded: AssetUploadedSchema,
  Health: HealthSchema,
  OpenApiDocument: OpenApiSchema,
  Problem: ProblemSchema,
  Timestamp,
} satisfies Record<string, z.ZodType>;

type RequestName = keyof typeof REQUESTS;
type ResponseName = keyof typeof RESPONSES;
type Tag = 'targets' | 'runs' | 'batches' | 'assets' | 'meta';

interface ResponseDoc {
  readonly description: string;
  /** Absent only for 204. */
  readonly schema?: ResponseName;
  readonly location?: boolean;
}

interface RouteDoc {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: Tag;
  /** No authentication. */
  readonly public?: boolean;
  readonly params?: z.ZodObject;
  readonly query?: z.ZodObject;
  readonly body?: RequestName;
  readonly idempotencyKey?: boolean;
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /** Route-specific problems; authentication and input problems are added from the rest of the entry. */
  readonly errors?: readonly ErrorCode[];
}

const ROUTE_DOCS = {
  'GET /healthz': {
    operationId: 'healthz',
    summary: 'Liveness',
    description: 'Unauthenticated; says nothing about configuration.',
    tag: 'meta',
    public: true,
    responses: { 200: { description: 'The service is up', schema: 'Health' } },
  },
  'GET /openapi.json': {
    operationId: 'getOpenApi',
    summary: 'This document',
    description:
      'Unauthenticated: the contract describes the API and holds no data, and clients read it before they hold a token.',
    tag: 'meta',
    public: true,
    responses: { 200: { description: 'The OpenAPI 3.1 document', schema: 'OpenApiDocument' } },
  },
  'PUT /targets/{id}': {
    operationId: 'putTarget',
    summary: 'Create or replace a registry row',
    tag: 'targets',
    params: TargetIdParams,
    body: 'TargetBody',
    responses: {
      201: { description: 'Created', schema: 'Target' },
      200: { description: 'Replaced', schema: 'Target' },
    },
  },
  'GET /targets': {
    operationId: 'listTargets',
    summary: 'Every registry row; untargetable rows carry the reason',
    tag: 'targets',
    responses: { 200: { description: 'The registry, sorted by id', schema: 'TargetList' } },
  },
  'GET /targets/{id}': {
    operationId: 'getTarget',
    summary: 'One registry row',
    tag: 'targets',
    params: TargetIdParams,
    responses: { 200: { description: 'The row', schema: 'Target' } },
    errors: ['not_found'],
  },
  'DELETE /targets/{id}': {
    operationId: 'deleteTarget',
    summary: 'Remove a registry row',
    description: 'Runs already queued for it are refused at dispatch.',
    tag: 'targets',
    params: TargetIdParams,
    responses: { 204: { description: 'Deleted' } },
    errors: ['not_found'],
  },
  'GET /inventory': {
    operationId: 'getInventory',
    summary:
      'Ansible dynamic JSON inventory: the registry, configured hypervisor groups, discovered cloud VMs',
    tag: 'targets',
    responses: { 200: { description: 'The inventory', schema: 'Inventory' } },
  },
  'GET /discovery': {
    operationId: 'getDiscovery',
    summary: 'Discovered cloud VMs (cached), untargetable ones with their reason',
    description:
      'The list the last refresh (scheduled every discovery_refresh_seconds, or POST /discovery/refresh) made. Each VM is targetable by its id like a registered target. Empty when discovery_clouds is unset.',
    tag: 'targets',
    responses: { 200: { description: 'The cached list', schema: 'DiscoverySnapshot' } },
  },
  'POST /discovery/refresh': {
    operationId: 'refreshDiscovery',
    summary: 'List the VMs of every cloud in discovery_clouds again',
    description:
      'A cloud that cannot be listed keeps its previous list and says why in `clouds.<cloud>.error`; concurrent refreshes share one round of calls.',
    tag: 'targets',
    responses: { 200: { description: 'The new list', schema: 'DiscoverySnapshot' } },
  },
  'POST /runs': {
    operationId: 'submitRun',
    summary: 'Submit one run',
    description:
      'Selection problems and bad assets are refused before anything is written. A runner refusal is recorded: the answer is then 200 with a `refused` run and its reason.',
    tag: 'runs',
    body: 'SubmitRunRequest',
    idempotencyKey: true,
    responses: {
      202: { description: 'Queued', schema: 'Run', location: true },
      200: {
        description: 'Refused by the runner rules (state `refused`, with `reason`)',
        schema: 'Run',
        location: true,
      },
    },
    errors: ['runner_refused', 'asset_outside_root', 'asset_not_found', 'idempotency_mismatch'],
  },
  'GET /runs': {
    operationId: 'listRuns',
    summary: 'List runs, newest first',
    tag: 'runs',
    query: ListRunsQuery,
    responses: { 200: { description: 'One page of runs', schema: 'RunList' } },
  },
  'GET /runs/{id}': {
    operationId: 'getRun',
    summary: 'One run, with its state history and start-latency timings',
    tag: 'runs',
    params: IdParams,
    responses: { 200: { description: 'The run', schema: 'Run' } },
    errors: ['not_found'],
  },
  'GET /runs/{id}/logs': {
    operationId: 'getRunLogs',
    summary: 'Redacted output after `cursor`, and the next cursor',
    description:
      'Follow a run by passing `nextCursor` back until `complete` is true and a page comes back empty.',
    tag: 'runs',
    params: IdParams,
    query: LogsQuery,
    responses: { 200: { description: 'One page of output', schema: 'LogPage' } },
    errors: ['not_found'],
  },
  'POST /runs/{id}/cancel': {
    operationId: 'cancelRun',
    summary: 'Request cancellation',
    description:
      'Answered with the run. A queued run is cancelled at once; a started one is flagged and stopped. A run that is already terminal is refused with `invalid-transition` (409) and left unchanged.',
    tag: 'runs',
    params: IdParams,
    responses: { 202: { description: 'Cancellation requested', schema: 'Run' } },
    errors: ['not_found', 'run_conflict', 'invalid_transition'],
  },
  'POST /batches': {
    operationId: 'submitBatch',
    summary: `One asset × 1–${MAX_BATCH_TARGETS} targets, one kind`,
    description:
      'A selection problem (unknown ids, mixed kinds, a target that does not fit the kind, an untargetable row) refuses the whole request with `selection-refused`, naming every offending target, and writes nothing. Targets the runner rules refuse (e.g. no runner configured for their cloud) are recorded as `refused` runs and listed in `failed`; the rest are queued.',
    tag: 'batches',
    body: 'SubmitBatchRequest',
    responses: {
      202: { description: 'At least one run queued', schema: 'BatchSubmitted', location: true },
      200: {
        description: 'Every target was refused by the runner rules',
        schema: 'BatchSubmitted',
        location: true,
      },
    },
    errors: ['selection_refused', 'asset_outside_root', 'asset_not_found'],
  },
  'GET /batches/{id}': {
    operationId: 'getBatch',
    summary: 'Rollup: runs per state, completeness, failures by target',
    tag: 'batches',
    params: IdParams,
    responses: { 200: { description: 'The rollup', schema: 'BatchRollup' } },
    errors: ['not_found'],
  },
  'POST /batches/{id}/retry': {
    operationId: 'retryBatch',
    summary: 'Re-submit the targets that did not succeed as a new batch',
    description:
      'Takes the targets whose runs ended failed, refused, timed_out or cancelled; runs still in flight are left alone. The new batch carries `retryOf`.',
    tag: 'batches',
    params: IdParams,
    responses: {
      202: { description: 'At least one run queued', schema: 'BatchSubmitted', location: true },
      200: { description: 'Every target was refused again', schema: 'BatchSubmitted', location: true },
    },
    errors: ['not_found', 'nothing_to_retry', 'selection_refused', 'asset_not_found'],
  },
  'POST /assets': {
    operationId: 'uploadAsset',
    summary: 'Upload a playbook, script or package to the active storage backend',
    description: `\`contentBase64\` decodes to at most ${MAX_ASSET_BYTES} bytes. Empty content is refused. Paths are relative, \`/\`-separated, with no \`..\` or hidden segments, printable characters only (no control, bidirectional or invisible format characters), ending in .yml, .yaml, .sh, .ps1, .rpm or .deb.`,
    tag: 'assets',
    body: 'UploadAssetRequest',
    responses: {
      201: { description: 'Created', schema: 'AssetUploaded' },
      200: { description: 'Replaced (overwrite: true)', schema: 'AssetUploaded' },
    },
    errors: ['asset_outside_root', 'asset_exists', 'no_active_storage'],
  },
  'GET /assets': {
    operationId: 'listAssets',
    summary: 'Assets on the active storage backend, with their type badge',
    tag: 'assets',
    responses: { 200: { description: 'Every asset, sorted by path', schema: 'AssetList' } },
    errors: ['no_active_storage'],
  },
} as const satisfies Record<RouteKey, RouteDoc>;

type JsonObject = Record<string, unknown>;

const ref = (name: ResponseName | RequestName) => ({ $ref: `#/components/schemas/${name}` });

/** Drop what only makes sense in a standalone JSON Schema; for responses, also the closed-object markers. */
function clean(value: unknown, open: boolean): unknown {
  if (Array.isArray(value)) return value.map((v) => clean(v, open));
  if (typeof value !== 'object' || value === null) return value;
  const out: JsonObject = {};
  for (const [key, v] of Object.entries(value)) {
    if (key === '$schema' || key === '$id') continue;
    if (open && key === 'additionalProperties' && v === false) continue;
    out[key] = clean(v, open);
  }
  return out;
}

function components(schemas: Record<string, z.ZodType>, io: 'input' | 'output'): JsonObject {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const generated = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` });
  return clean(generated.schemas, io === 'output') as JsonObject;
}

function parameters(schema: z.ZodObject | undefined, where: 'path' | 'query'): JsonObject[] {
  if (schema === undefined) return [];
  const json = clean(z.toJSONSchema(schema, { io: 'input' }), false) as {
    properties?: Record<string, JsonObject>;
    required?: string[];
  };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    // Documentation tools show a parameter's own description, not its schema's.
    ...(typeof property.description === 'string' ? { description: property.description } : {}),
    schema: property,
  }));
}

const problemContent = (types: readonly string[]) => ({
  'application/problem+json': {
    schema: {
      allOf: [ref('Problem'), { type: 'object', properties: { type: { enum: [...types] } } }],
    },
  },
});

function errorResponses(doc: RouteDoc): Record<string, JsonObject> {
  const codes = new Set<ErrorCode>(doc.errors ?? []);
  if (doc.public !== true) codes.add('unauthorized');
  if (doc.body !== undefined) {
    for (const code of ['validation_failed', 'payload_too_large', 'unsupported_media_type'] as const)
      codes.add(code);
  }
  if (doc.params !== undefined || doc.query !== undefined) codes.add('validation_failed');
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const { status } = PROBLEM_KINDS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, JsonObject> = {};
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: list.map((code) => PROBLEM_KINDS[code].title).join('; '),
      content: problemContent(list.map(problemType)),
    };
  }
  responses['500'] = {
    description: 'Unexpected error (details are in the service log) or a misconfigured service',
    content: problemContent(['about:blank', problemType('settings_invalid')]),
  };
  return responses;
}

function operation(doc: RouteDoc): JsonObject {
  const responses: Record<string, JsonObject> = {};
  for (const [status, response] of Object.entries(doc.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.location === true
        ? { headers: { Location: { description: 'where to read the result', schema: { type: 'string' } } } }
        : {}),
      ...(response.schema === undefined
        ? {}
        : { content: { 'application/json': { schema: ref(response.schema) } } }),
    };
  }
  const params = [
    ...parameters(doc.params, 'path'),
    ...parameters(doc.query, 'query'),
    ...(doc.idempotencyKey === true
      ? [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'A repeated key with the same body returns the first run (header `idempotent-replayed: true`)',
            schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
          },
        ]
      : []),
  ];
  return {
    operationId: doc.operationId,
    summary: doc.summary,
    ...(doc.description === undefined ? {} : { description: doc.description }),
    tags: [doc.tag],
    ...(doc.public === true ? { security: [] } : {}),
    ...(params.length === 0 ? {} : { parameters: params }),
    ...(doc.body === undefined
      ? {}
      : { requestBody: { required: true, content: { 'application/json': { schema: ref(doc.body) } } } }),
    responses: { ...responses, ...errorResponses(doc) },
  };
}

function build(): JsonObject {
  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const [key, doc] of Object.entries(ROUTE_DOCS) as [RouteKey, RouteDoc][]) {
    const [method = '', path = ''] = key.split(' ');
    paths[path] = { ...paths[path], [method.toLowerCase()]: operation(doc) };
  }
  const problemTypes = (Object.keys(PROBLEM_KINDS) as ErrorCode[]).map((code) => ({
    type: problemType(code),
    status: PROBLEM_KINDS[code].status,
    title: PROBLEM_KINDS[code].title,
  }));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Remote Worker API',
      version: '1.0.0',
      description:
        'Runs infrastructure jobs on the machine that can reach their target. Every route but /healthz and /openapi.json needs a bearer token. Errors are RFC 9457 problem+json with a stable `type` (listed in `x-problem-types`).',
    },
    // Relative: resolved against wherever this document was fetched, which is the API itself in both
    // modes (local mode's listener, or the HTTP API's $default stage, which has no path prefix).
    servers: [{ url: '/', description: 'The API that serves this document' }],
    tags: [
      { name: 'targets', description: 'The target registry' },
      { name: 'runs', description: 'Single runs, their output and cancellation' },
      { name: 'batches', description: 'One asset against many targets' },
      { name: 'assets', description: 'Playbooks, scripts and packages on the storage backend' },
      { name: 'meta', description: 'Liveness and this contract' },
    ],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Local mode: the token printed at first start (REMOTE_WORKER_TOKEN). AWS: a JWT authorizer.',
        },
      },
      schemas: { ...components(REQUESTS, 'input'), ...components(RESPONSES, 'output') },
    },
    'x-problem-types': problemTypes,
  };
}

let cached: JsonObject | undefined;

/** The document, built once per process. */
export function openApiDocument(): JsonObject {
  cached ??= build();
  return cached;
}
