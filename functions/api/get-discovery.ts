import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /discovery: the cached list of discovered cloud VMs, untargetable ones with their reason. */
export const makeGetDiscovery = (deps: ApiDeps) =>
  httpHandler(deps, {
    handle: async () => json(200, deps.discovery?.snapshot() ?? { clouds: {}, vms: [] }),
  });

export const handler = lambdaHttpHandler(makeGetDiscovery);
