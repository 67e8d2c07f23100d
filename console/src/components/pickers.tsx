import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Asset, RunKind, Target } from '../api/client.ts';
import { AssetBadge } from './badges.tsx';

export const CLOUD_LABEL: Record<Target['cloud'], string> = {
  local: 'On-premises',
  aws: 'AWS',
  azure: 'Azure',
  gcp: 'GCP',
  oci: 'OCI',
};
const CLOUD_ORDER: readonly Target['cloud'][] = ['local', 'aws', 'azure', 'gcp', 'oci'];

/** The `<option>`s of a cloud select, one for each cloud, labelled. */
export const CloudOptions = () => (
  <>
    {Object.entries(CLOUD_LABEL).map(([value, label]) => (
      <option key={value} value={value}>
        {label}
      </option>
    ))}
  </>
);

/** One `<option>` per value, labelled with the value itself (states, run kinds, actions). */
export const ValueOptions = ({ values }: { values: readonly string[] }) => (
  <>
    {values.map((v) => (
      <option key={v} value={v}>
        {v}
      </option>
    ))}
  </>
);

/** A list filter's select, wrapped in its label: "any" (the empty value) first, then the `children` options. */
export function FilterSelect({
  label,
  name,
  value,
  onChange,
  children,
}: {
  label: string;
  name?: string;
  value: string;
  onChange: (value: string) => void;
  children: ComponentChildren;
}) {
  return (
    <label>
      {label}
      <select name={name} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">any</option>
        {children}
      </select>
    </label>
  );
}

/** The `<option>`s of a target kind select. */
export const TargetKindOptions = () => (
  <>
    <option value="vm">VM</option>
    <option value="cluster">Cluster</option>
    <option value="database">Database</option>
    <option value="virtual_desktop">Virtual desktop</option>
  </>
);

/** Which registry kind a run kind targets; portainer runs take no target. */
export const TARGET_KIND_FOR: Record<RunKind, Target['kind'] | undefined> = {
  vm: 'vm',
  cluster_play: 'cluster',
  k8s_op: 'cluster',
  database_play: 'database',
  portainer: undefined,
};
const KIND_LABEL: Record<Target['kind'], string> = {
  vm: 'VM',
  cluster: 'cluster',
  database: 'database',
  virtual_desktop: 'virtual desktop',
};

/** Why a row cannot be picked for this run kind: the server's reason first, then the kind rule. */
export function whyNot(target: Target, kind: RunKind): string | undefined {
  if (target.untargetable) return target.untargetable;
  const wanted = TARGET_KIND_FOR[kind];
  if (wanted !== undefined && target.kind !== wanted) {
    return `a ${kind} run needs a ${KIND_LABEL[wanted]}; this is a ${KIND_LABEL[target.kind]}`;
  }
  return undefined;
}

export function describeTarget(t: Target): string {
  switch (t.kind) {
    case 'vm':
      return [t.address ?? (t.node ? `${t.node}/${t.vmid}` : ''), t.connection, t.os]
        .filter(Boolean)
        .join(' · ');
    case 'cluster':
      return [t.provider, t.region, t.clusterName].filter(Boolean).join(' · ');
    case 'database':
      return [t.engine, t.endpoint.host, t.source].filter(Boolean).join(' · ');
    default:
      return KIND_LABEL[t.kind];
  }
}

/**
 * The target picker: one radio group, rows grouped by cloud. A row that cannot
 * be a target for this kind is disabled and says why (visibly and on hover).
 * Radios, not a select: a disabled option's reason cannot be shown in a select.
 */
export function TargetPicker({
  targets,
  kind,
  value,
  onChange,
  invalid,
}: {
  targets: readonly Target[];
  kind: RunKind;
  value: string;
  onChange: (id: string) => void;
  invalid?: string | undefined;
}) {
  const [filter, setFilter] = useState('');
  const needle = filter.trim().toLowerCase();
  const shown = targets.filter(
    (t) => needle === '' || `${t.id} ${t.name} ${describeTarget(t)}`.toLowerCase().includes(needle),
  );
  return (
    <fieldset class="picker" aria-describedby={invalid ? 'target-error' : undefined}>
      <legend>Target</legend>
      <FilterBox what="targets" value={filter} onText={setFilter} />
      <div class="picker-list">
        {CLOUD_ORDER.map((cloud) => {
          const rows = shown.filter((t) => t.cloud === cloud);
          if (rows.length === 0) return null;
          return (
            <fieldset key={cloud} class="picker-group">
              <legend class="picker-group-label">{CLOUD_LABEL[cloud]}</legend>
              {rows.map((t) => {
                const reason = whyNot(t, kind);
                return (
                  <label key={t.id} class={reason ? 'option disabled' : 'option'} title={reason}>
                    <input
                      type="radio"
                      name="targetId"
                      value={t.id}
                      checked={value === t.id}
                      disabled={reason !== undefined}
                      onChange={() => onChange(t.id)}
                    />
                    <span>
                      <strong>{t.name}</strong> <code>{t.id}</code>
                      <span class="hint"> {describeTarget(t)}</span>
                      {reason && <span class="reason">{reason}</span>}
                    </span>
                  </label>
                );
              })}
            </fieldset>
          );
        })}
        {shown.length === 0 && <p class="hint">No targets{needle ? ' match' : ' registered'}.</p>}
      </div>
    </fieldset>
  );
}

/** The search box above a picker's options. */
function FilterBox({ what, value, onText }: { what: string; value: string; onText: (text: string) => void }) {
  return (
    <input
      type="search"
      placeholder={`Filter ${what}`}
      aria-label={`Filter ${what}`}
      value={value}
      onInput={(e) => onText(e.currentTarget.value)}
    />
  );
}

/** The asset picker: every asset on the active backend, with its type badge. */
export function AssetPicker({
  assets,
  value,
  onChange,
  name = 'asset',
}: {
  assets: readonly Asset[];
  value: string;
  onChange: (path: string) => void;
  name?: string;
}) {
  const [filter, setFilter] = useState('');
  const needle = filter.trim().toLowerCase();
  const shown = assets.filter((a) => needle === '' || a.path.toLowerCase().includes(needle));
  return (
    <fieldset class="picker">
      <legend>Asset</legend>
      <FilterBox what="assets" value={filter} onText={setFilter} />
      <div class="picker-list">
        {shown.map((a) => (
          <label key={a.path} class="option">
            <input
              type="radio"
              name={name}
              value={a.path}
              checked={value === a.path}
              onChange={() => onChange(a.path)}
            />
            <span>
              <AssetBadge type={a.type} /> <code>{a.path}</code>
            </span>
          </label>
        ))}
        {shown.length === 0 && <p class="hint">No assets{needle ? ' match' : ' uploaded'}.</p>}
      </div>
    </fieldset>
  );
}
