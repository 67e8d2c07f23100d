import type { ApiDeps } from '../../shared/http/api-deps.ts';
import type { HttpHandler } from '../../shared/http/handler.ts';
import type { RouteKey } from '../../shared/http/route-docs.ts';
import { makeCancelRun } from './cancel-run.ts';
import { makeDeleteTarget } from './delete-target.ts';
import { makeGetBatch } from './get-batch.ts';
import { makeGetDiscovery } from './get-discovery.ts';
import { makeGetInventory } from './get-inventory.ts';
import { makeGetOpenApi } from './get-openapi.ts';
import { makeGetRun } from './get-run.ts';
import { makeGetRunLogs } from './get-run-logs.ts';
import { makeGetTarget } from './get-target.ts';
import { makeHealthz } from './healthz.ts';
import { makeListAssets } from './list-assets.ts';
import { makeListRuns } from './list-runs.ts';
import { makeListTargets } from './list-targets.ts';
import { makePutTarget } from './put-target.ts';
import { makeRefreshDiscovery } from './refresh-discovery.ts';
import { makeRetryBatch } from './retry-batch.ts';
import { makeSubmitBatch } from './submit-batch.ts';
import { makeSubmitRun } from './submit-run.ts';
import { makeUploadAsset } from './upload-asset.ts';

/** The public REST API (v1): route key → handler factory. API Gateway and local mode both read this table. */
export const API_ROUTES = {
  'GET /healthz': makeHealthz,
  'PUT /targets/{id}': makePutTarget,
  'GET /targets': makeListTargets,
  'GET /targets/{id}': makeGetTarget,
  'DELETE /targets/{id}': makeDeleteTarget,
  'GET /inventory': makeGetInventory,
  'GET /discovery': makeGetDiscovery,
  'POST /discovery/refresh': makeRefreshDiscovery,
  'POST /runs': makeSubmitRun,
  'GET /runs': makeListRuns,
  'GET /runs/{id}': makeGetRun,
  'GET /runs/{id}/logs': makeGetRunLogs,
  'POST /runs/{id}/cancel': makeCancelRun,
  'POST /batches': makeSubmitBatch,
  'GET /batches/{id}': makeGetBatch,
  'POST /batches/{id}/retry': makeRetryBatch,
  'POST /assets': makeUploadAsset,
  'GET /assets': makeListAssets,
  'GET /openapi.json': makeGetOpenApi,
} as const satisfies Record<RouteKey, (deps: ApiDeps) => HttpHandler>;

export type { RouteKey } from '../../shared/http/route-docs.ts';
