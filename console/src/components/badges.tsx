import type { Asset, RunState } from '../api/client.ts';

const ASSET_LABEL: Record<Asset['type'], string> = {
  playbook: 'Playbook',
  script: 'Script',
  powershell: 'PowerShell',
  rpm: 'RPM',
  deb: 'DEB',
  other: 'Other',
};

/** The colour badge of an asset's type (colour is never the only cue: the label is the text). */
export function AssetBadge({ type }: { type: Asset['type'] }) {
  return <span class={`badge asset-${type}`}>{ASSET_LABEL[type]}</span>;
}

export function StateBadge({ state }: { state: RunState }) {
  return <span class={`badge state-${state}`}>{state.replace('_', ' ')}</span>;
}

/** Scripts and packages get a wrapper playbook; extra vars reach only real playbooks. */
export const takesExtraVars = (type: Asset['type'] | undefined) => type === undefined || type === 'playbook';
