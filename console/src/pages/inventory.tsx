import { useState } from 'preact/hooks';
import { api, type RunKind, type Target } from '../api/client.ts';
import { checkExtraVars, ExtraVarsField } from '../components/extra-vars.tsx';
import { ListTable } from '../components/list-table.tsx';
import {
  AssetPicker,
  CLOUD_LABEL,
  CloudOptions,
  describeTarget,
  FilterSelect,
  TargetKindOptions,
  ValueOptions,
} from '../components/pickers.tsx';
import { ProblemView } from '../components/problem.tsx';
import { SshUserField, TimeoutField } from '../components/run-fields.tsx';
import { type Binding, SecretBindings } from '../components/secret-bindings.tsx';
import { openQueuedBatch } from '../flash.ts';
import { useAction, useLoad } from '../hooks.ts';

/** docs/api.md: a batch is 1–50 targets. */
const MAX_BATCH = 50;
const RUN_KINDS_FOR: Record<Target['kind'], readonly RunKind[]> = {
  vm: ['vm'],
  cluster: ['cluster_play', 'k8s_op'],
  database: ['database_play'],
  virtual_desktop: [],
};

/**
 * The registry as an inventory: filter, tick up to 50 rows of one kind, and a
 * run panel queues them as one batch. What the page locks (other kinds,
 * untargetable rows, the 51st row) it says why; what only the API knows it
 * shows as the API said it.
 */
export function InventoryPage() {
  const list = useLoad(() => api.GET('/targets'));
  const assets = useLoad(() => api.GET('/assets'));
  const [text, setText] = useState('');
  const [cloud, setCloud] = useState('');
  const [kindFilter, setKindFilter] = useState('');
  const [selected, setSelected] = useState<readonly string[]>([]);
  const [runKind, setRunKind] = useState<RunKind>();
  const [asset, setAsset] = useState('');
  const [varsText, setVarsText] = useState('');
  const [bindings, setBindings] = useState<Binding[]>([]);
  const [sshUser, setSshUser] = useState('');
  const [timeout, setTimeoutText] = useState('');
  const { busy, problem, setProblem, request } = useAction();

  const targets = list.data?.targets ?? [];
  const byId = new Map(targets.map((t) => [t.id, t]));
  const lockedKind = selected.length > 0 ? byId.get(selected[0] ?? '')?.kind : undefined;
  const kinds = lockedKind ? RUN_KINDS_FOR[lockedKind] : [];
  const chosenKind = runKind && kinds.includes(runKind) ? runKind : kinds[0];
  const refusedBy = new Map((problem?.targets ?? []).map((t) => [t.targetId, t.reason]));
  const needle = text.trim().toLowerCase();
  const rows = targets.filter(
    (t) =>
      (cloud === '' || t.cloud === cloud) &&
      (kindFilter === '' || t.kind === kindFilter) &&
      (needle === '' || `${t.id} ${t.name} ${describeTarget(t)}`.toLowerCase().includes(needle)),
  );

  function lockReason(t: Target): string | undefined {
    if (t.untargetable) return t.untargetable;
    if (selected.includes(t.id)) return undefined;
    if (lockedKind && t.kind !== lockedKind) return `One kind per batch: ${lockedKind} rows are selected`;
    if (selected.length >= MAX_BATCH) return `At most ${MAX_BATCH} targets per batch`;
    return undefined;
  }

  const toggle = (id: string, on: boolean) =>
    setSelected(on ? [...selected, id] : selected.filter((s) => s !== id));

  function selectShown() {
    const next = [...selected];
    for (const t of rows) {
      if (next.length >= MAX_BATCH) break;
      const kind = next.length > 0 ? byId.get(next[0] ?? '')?.kind : t.kind;
      if (!t.untargetable && t.kind === kind && !next.includes(t.id)) next.push(t.id);
    }
    setSelected(next);
  }

  async function queue(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    const vars = await checkExtraVars(varsText);
    if (!vars.ok || !chosenKind || asset === '') {
      return setProblem({
        type: 'about:blank',
        title: 'Check the run panel',
        status: 0,
        detail: !vars.ok ? vars.message : asset === '' ? 'Pick an asset.' : 'These rows cannot be run.',
      });
    }
    await request(
      () =>
        api.POST('/batches', {
          body: {
            kind: chosenKind,
            asset,
            targetIds: [...selected],
            ...(Object.keys(vars.value).length > 0 ? { extraVars: vars.value } : {}),
            ...(bindings.length > 0 ? { secrets: bindings } : {}),
            ...(sshUser.trim() && chosenKind === 'vm' ? { sshUser: sshUser.trim() } : {}),
            ...(timeout ? { timeoutSeconds: Number(timeout) } : {}),
          },
        }),
      openQueuedBatch,
    );
  }

  return (
    <section aria-labelledby="inv-h">
      <h1 id="inv-h">Inventory</h1>
      {list.problem && <ProblemView problem={list.problem} heading="The registry could not be read" />}
      <form class="filters" aria-label="Filter the inventory" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search
          <input type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <FilterSelect label="Cloud" value={cloud} onChange={setCloud}>
          <CloudOptions />
        </FilterSelect>
        <FilterSelect label="Kind" value={kindFilter} onChange={setKindFilter}>
          <TargetKindOptions />
        </FilterSelect>
        <button type="button" class="secondary" onClick={selectShown}>
          Select shown (up to {MAX_BATCH})
        </button>
        {selected.length > 0 && (
          <button type="button" class="secondary" onClick={() => setSelected([])}>
            Clear selection
          </button>
        )}
      </form>
      <p class="hint" aria-live="polite">
        {selected.length} of {MAX_BATCH} selected{lockedKind ? ` · ${lockedKind} rows only` : ''}
      </p>
      <ListTable label="Inventory table" columns={[{ hidden: 'Select' }, 'Name', 'Kind', 'Cloud', 'Details']}>
        {rows.map((t) => {
          const reason = lockReason(t);
          const refused = refusedBy.get(t.id);
          return (
            <tr key={t.id} class={refused ? 'refused-row' : undefined} title={reason}>
              <td>
                <input
                  type="checkbox"
                  aria-label={`Select ${t.name} (${t.id})`}
                  checked={selected.includes(t.id)}
                  disabled={reason !== undefined}
                  onChange={(e) => toggle(t.id, e.currentTarget.checked)}
                  aria-describedby={reason || refused ? `why-${t.id}` : undefined}
                />
              </td>
              <td>
                {t.name} <code>{t.id}</code>
              </td>
              <td>{t.kind}</td>
              <td>{CLOUD_LABEL[t.cloud]}</td>
              <td class="wrap">
                {describeTarget(t)}
                {(reason || refused) && (
                  <span class="reason" id={`why-${t.id}`}>
                    {refused ? `Refused: ${refused}` : reason}
                  </span>
                )}
              </td>
            </tr>
          );
        })}
      </ListTable>
      {problem && (
        <ProblemView problem={problem} heading={problem.targets ? 'The batch was refused' : undefined} />
      )}
      {selected.length > 0 && (
        <form class="card run-panel" onSubmit={queue} aria-labelledby="panel-h">
          <h2 id="panel-h">
            Run on {selected.length} target{selected.length === 1 ? '' : 's'}
          </h2>
          <div class="field">
            <label for="batch-kind">Run kind</label>
            <select
              id="batch-kind"
              value={chosenKind}
              onChange={(e) => setRunKind(e.currentTarget.value as RunKind)}
            >
              <ValueOptions values={kinds} />
            </select>
          </div>
          <AssetPicker
            assets={assets.data?.assets ?? []}
            value={asset}
            onChange={setAsset}
            name="batch-asset"
          />
          <ExtraVarsField
            id="batch-vars"
            text={varsText}
            onText={setVarsText}
            assetType={assets.data?.assets.find((a) => a.path === asset)?.type}
          />
          <SecretBindings bindings={bindings} onChange={setBindings} problem={problem} />
          <div class="row">
            {chosenKind === 'vm' && <SshUserField id="batch-ssh" value={sshUser} onText={setSshUser} />}
            <TimeoutField id="batch-timeout" value={timeout} onText={setTimeoutText} />
          </div>
          <button type="submit" disabled={busy}>
            {busy ? 'Queueing…' : `Queue batch (${selected.length})`}
          </button>
        </form>
      )}
    </section>
  );
}
