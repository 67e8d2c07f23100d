import type { AssetType } from './task-spec.ts';

/** The task spec's schema and types live in task-spec.ts; these names stay importable from here. */
export type { AnsibleInventory, AssetType, TaskSpec } from './task-spec.ts';

/** Asset type from its file name; undefined for an extension no wrapper exists for. */
export function assetTypeOf(path: string): AssetType | undefined {
  const lower = path.toLowerCase();
  if (lower.endsWith('.yml') || lower.endsWith('.yaml')) return 'playbook';
  if (lower.endsWith('.sh')) return 'script';
  if (lower.endsWith('.ps1')) return 'powershell';
  if (lower.endsWith('.rpm')) return 'rpm';
  if (lower.endsWith('.deb')) return 'deb';
  return undefined;
}
