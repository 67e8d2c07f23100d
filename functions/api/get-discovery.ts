import { type BareApiDeps, bareHttpHandler } from '../../shared/composition/lambda/bare.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /discovery: the cached list of discovered cloud VMs, untargetable ones with their reason. */
export const makeGetDiscovery = (deps: BareApiDeps & Pick<ApiDeps, 'discovery'>) =>
  httpHandler(deps, {
    handle: async () => json(200, deps.discovery?.snapshot() ?? { clouds: {}, vms: [] }),
  });

export const handler = bareHttpHandler(makeGetDiscovery);
