import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/**
 * POST /discovery/refresh: ask every cloud in discovery_clouds again (each
 * bounded by CLOUD_LISTING_TIMEOUT_SECONDS; a cloud that fails keeps its
 * previous list and says why); answers the new list. Deployed, it is one of
 * the two functions bundled with the listing SDKs (infra/handlers.ts
 * `discoversVms`) and writes the runs table the others read.
 */
export const makeRefreshDiscovery = (deps: TableApiDeps) =>
  httpHandler(deps, {
    handle: async () => json(200, (await deps.discovery?.refresh()) ?? { clouds: {}, vms: [] }),
  });

export const handler = tableHttpHandler(makeRefreshDiscovery);
