import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { hypervisorInventory } from '../../shared/domain/hypervisors.ts';
import { registryInventory } from '../../shared/domain/inventory.ts';
import { mergeInventory } from '../../shared/domain/inventory-groups.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/**
 * GET /inventory: Ansible dynamic JSON inventory built from the registry and
 * every hypervisor integration that is enabled and has a host, and the
 * discovered cloud VMs (one group per cloud).
 */
export const makeGetInventory = (deps: TableApiDeps) =>
  httpHandler(deps, {
    handle: async () =>
      json(
        200,
        mergeInventory(
          registryInventory(await deps.targets.listTargets()),
          hypervisorInventory(deps.settings),
          ...(deps.discovery === undefined ? [] : [await deps.discovery.inventory()]),
        ),
      ),
  });

export const handler = tableHttpHandler(makeGetInventory);
