import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import { registryInventory } from '../../shared/domain/inventory.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /inventory: Ansible dynamic JSON inventory built from the registry. */
export const makeGetInventory = (deps: ApiDeps) =>
  httpHandler(deps, {
    handle: async () => json(200, registryInventory(await deps.targets.listTargets())),
  });

export const handler = lambdaHttpHandler(makeGetInventory);
