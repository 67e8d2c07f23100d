import { MAX_ASSET_BYTES } from '../app/assets.ts';
import { MAX_BATCH_TARGETS } from '../domain/batch.ts';
import type { ErrorCode } from '../domain/errors.ts';
import { TargetBodySchema } from '../domain/target.ts';
import type * as z from '../lib/zod.ts';
import { DiscoverySnapshotSchema } from './discovery-schemas.ts';
import { ListRunsQuery, LogsQuery } from './query-schemas.ts';
import { SubmitBatchBody, SubmitRunBody, UploadAssetBody } from './request-schemas.ts';
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
import { IdParams, TargetIdParams } from './schemas.ts';

/**
 * What the OpenAPI document says about each route: the request and response
 * components by name, and one entry per route (its operation, parameters,
 * body, answers and route-specific problems). `ROUTE_DOCS` is the list of the
 * API's routes: the handler table (functions/api/routes.ts) must name the same
 * keys — the compiler checks that — and openapi.ts renders the document.
 */

export const REQUESTS = {
  SubmitRunRequest: SubmitRunBody,
  SubmitBatchRequest: SubmitBatchBody,
  TargetBody: TargetBodySchema,
  UploadAssetRequest: UploadAssetBody,
} satisfies Record<string, z.ZodMiniType>;

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
} satisfies Record<string, z.ZodMiniType>;

export type RequestName = keyof typeof REQUESTS;
export type ResponseName = keyof typeof RESPONSES;
type Tag = 'targets' | 'runs' | 'batches' | 'assets' | 'meta';

interface ResponseDoc {
  readonly description: string;
  /** Absent only for 204. */
  readonly schema?: ResponseName;
  readonly location?: boolean;
}

export interface RouteDoc {
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: Tag;
  /** No authentication. */
  readonly public?: boolean;
  readonly params?: z.ZodMiniObject;
  readonly query?: z.ZodMiniObject;
  readonly body?: RequestName;
  readonly idempotencyKey?: boolean;
  readonly responses: Readonly<Record<number, ResponseDoc>>;
  /** Route-specific problems; authentication and input problems are added from the rest of the entry. */
  readonly errors?: readonly ErrorCode[];
}

export const ROUTE_DOCS = {
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
} as const satisfies Record<string, RouteDoc>;

/** Every route of the API; functions/api/routes.ts maps each to its handler (`satisfies Record<RouteKey, …>`). */
export type RouteKey = keyof typeof ROUTE_DOCS;
