import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/**
 * GET /discovery: the cached list of discovered cloud VMs, untargetable ones
 * with their reason: local mode's memory, or what the last refresh (on
 * demand or scheduled) wrote to the deployed stack's runs table.
 */
export const makeGetDiscovery = (deps: TableApiDeps) =>
  httpHandler(deps, {
    handle: async () => json(200, (await deps.discovery?.snapshot()) ?? { clouds: {}, vms: [] }),
  });

export const handler = tableHttpHandler(makeGetDiscovery);
