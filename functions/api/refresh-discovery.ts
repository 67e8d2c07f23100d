import { type BareApiDeps, bareHttpHandler } from '../../shared/composition/lambda/bare.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** POST /discovery/refresh: ask every cloud in discovery_clouds again; answers the new list. */
export const makeRefreshDiscovery = (deps: BareApiDeps & Pick<ApiDeps, 'discovery'>) =>
  httpHandler(deps, {
    handle: async () => json(200, (await deps.discovery?.refresh()) ?? { clouds: {}, vms: [] }),
  });

export const handler = bareHttpHandler(makeRefreshDiscovery);
