import type { DynamicInventory } from './inventory.ts';

/**
 * Groups from sources other than the registry (hypervisor integrations,
 * discovered cloud VMs), merged into `GET /inventory`'s dynamic inventory.
 */
export interface InventoryGroups {
  readonly hostvars: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Group name → its hosts. */
  readonly groups: Readonly<Record<string, readonly string[]>>;
}

/**
 * `base` with `extra`'s hosts and groups added. A host already in `base`
 * keeps its variables (the registry wins); `all.children` stays sorted.
 */
export function mergeInventory(
  base: DynamicInventory,
  ...extras: readonly InventoryGroups[]
): DynamicInventory {
  const hostvars: Record<string, Readonly<Record<string, unknown>>> = { ...base._meta.hostvars };
  const groups = new Map<string, string[]>();
  for (const name of base.all.children) {
    const group = base[name] as { readonly hosts?: readonly string[] } | undefined;
    groups.set(name, [...(group?.hosts ?? [])]);
  }
  for (const extra of extras) {
    for (const [host, vars] of Object.entries(extra.hostvars)) hostvars[host] ??= vars;
    for (const [name, hosts] of Object.entries(extra.groups)) {
      const members = groups.get(name) ?? [];
      for (const host of hosts) if (!members.includes(host)) members.push(host);
      groups.set(name, members);
    }
  }
  const names = [...groups.keys()].sort();
  const inventory: Record<string, unknown> = { _meta: { hostvars }, all: { children: names } };
  for (const name of names) inventory[name] = { hosts: groups.get(name) ?? [] };
  return inventory as unknown as DynamicInventory;
}
