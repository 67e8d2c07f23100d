import type { ErrorCode } from '../domain/errors.ts';
import * as z from '../lib/zod.ts';
import { PROBLEM_KINDS, problemType } from './problem.ts';
import {
  REQUESTS,
  RESPONSES,
  type RequestName,
  type ResponseName,
  ROUTE_DOCS,
  type RouteDoc,
  type RouteKey,
} from './route-docs.ts';

export { RESPONSES } from './route-docs.ts';

/**
 * The OpenAPI 3.1 document, generated from the zod schemas the handlers
 * validate with (request bodies, path and query parameters) and the response
 * schemas in response-schemas.ts. `ROUTE_DOCS` (route-docs.ts) lists every
 * route, functions/api/routes.ts maps each to its handler — the compiler
 * checks both name the same keys — and the test checks the document against
 * the live routes.
 *
 * Request bodies are documented as the server enforces them (unknown fields
 * refused); response objects are open (`additionalProperties` unset), since
 * adding a field to an answer is not a breaking change.
 */

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

function components(schemas: Record<string, z.ZodMiniType>, io: 'input' | 'output'): JsonObject {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const generated = z.toJSONSchema(registry, { io, uri: (id) => `#/components/schemas/${id}` });
  return clean(generated.schemas, io === 'output') as JsonObject;
}

function parameters(schema: z.ZodMiniObject | undefined, where: 'path' | 'query'): JsonObject[] {
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
