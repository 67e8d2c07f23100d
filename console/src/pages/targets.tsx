import { useState } from 'preact/hooks';
import { api, asProblem, type Target, type TargetBody } from '../api/client.ts';
import { Field } from '../components/field.tsx';
import { ListTable } from '../components/list-table.tsx';
import { CLOUD_LABEL, CloudOptions, describeTarget, TargetKindOptions } from '../components/pickers.tsx';
import { fieldError, ProblemView } from '../components/problem.tsx';
import { useAction, useLoad } from '../hooks.ts';

type Kind = Target['kind'];
type Draft = Record<string, string>;

/** The form's fields per kind: `key` is the body field (dotted for the database endpoint). */
const FIELDS: Record<
  Kind,
  readonly { key: string; label: string; options?: readonly string[]; number?: boolean }[]
> = {
  vm: [
    { key: 'address', label: 'Address' },
    { key: 'port', label: 'Port', number: true },
    { key: 'connection', label: 'Connection', options: ['ssh', 'winrm', 'local'] },
    { key: 'os', label: 'OS', options: ['', 'linux', 'windows'] },
    { key: 'hypervisorGroup', label: 'Hypervisor group' },
    { key: 'node', label: 'Node (Proxmox/Nutanix)' },
    { key: 'vmid', label: 'VMID', number: true },
    { key: 'sshUser', label: 'SSH user' },
  ],
  cluster: [
    { key: 'provider', label: 'Provider', options: ['eks', 'aks', 'gke', 'kubeconfig', 'k3s', 'other'] },
    { key: 'credentialsRef', label: 'Credentials reference' },
    { key: 'region', label: 'Region' },
    { key: 'clusterName', label: 'Cluster name' },
  ],
  database: [
    {
      key: 'engine',
      label: 'Engine',
      options: ['postgresql', 'mysql', 'mariadb', 'mssql', 'oracle', 'mongodb'],
    },
    { key: 'endpoint.host', label: 'Endpoint host' },
    { key: 'endpoint.port', label: 'Endpoint port', number: true },
    { key: 'source', label: 'Source', options: ['provisioned', 'registered'] },
    { key: 'managedAccount', label: 'Managed account' },
    { key: 'credentialsRef', label: 'Credentials reference' },
  ],
  virtual_desktop: [],
};

function draftOf(target: Target): Draft {
  const draft: Draft = { id: target.id, name: target.name, cloud: target.cloud, kind: target.kind };
  for (const f of FIELDS[target.kind]) {
    const [head, tail] = f.key.split('.') as [string, string | undefined];
    const raw = (target as Record<string, unknown>)[head];
    const value = tail === undefined ? raw : (raw as Record<string, unknown> | undefined)?.[tail];
    if (value !== undefined) draft[f.key] = String(value);
  }
  return draft;
}

function bodyOf(draft: Draft, original: Target | undefined): TargetBody {
  const kind = (draft.kind ?? 'vm') as Kind;
  const body: Record<string, unknown> = { kind, name: draft.name ?? '', cloud: draft.cloud ?? 'local' };
  // Labels have no editor here: an edit keeps them as they were.
  if (original?.labels) body.labels = original.labels;
  for (const f of FIELDS[kind]) {
    const value = draft[f.key]?.trim();
    if (!value) continue;
    const typed = f.number ? Number(value) : value;
    const [head, tail] = f.key.split('.') as [string, string | undefined];
    if (tail === undefined) body[head] = typed;
    else body[head] = { ...((body[head] as object | undefined) ?? {}), [tail]: typed };
  }
  return body as TargetBody;
}

export function TargetsPage() {
  const list = useLoad(() => api.GET('/targets'));
  const [draft, setDraft] = useState<Draft>({ kind: 'vm', cloud: 'local', connection: 'ssh' });
  const [editing, setEditing] = useState<Target>();
  const { problem, setProblem, request, run } = useAction();
  const [saved, setSaved] = useState<string>();
  const [confirming, setConfirming] = useState<string>();

  const kind = (draft.kind ?? 'vm') as Kind;
  const set = (key: string, value: string) => setDraft({ ...draft, [key]: value });
  const err = (path: string) => fieldError(problem, path);

  async function save(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    setSaved(undefined);
    const id = (draft.id ?? '').trim();
    await request(
      () => api.PUT('/targets/{id}', { params: { path: { id } }, body: bodyOf(draft, editing) }),
      (data, response) => {
        setSaved(`${response.status === 201 ? 'Registered' : 'Saved'} ${data.id}`);
        setEditing(undefined);
        setDraft({ kind: 'vm', cloud: 'local', connection: 'ssh' });
        list.reload();
      },
    );
  }

  async function remove(id: string) {
    setConfirming(undefined);
    setProblem(undefined);
    // Not `request`: a deletion answers 204 with no data.
    await run(async () => {
      const { error, response } = await api.DELETE('/targets/{id}', { params: { path: { id } } });
      if (!response.ok) setProblem(asProblem(error, response));
      else {
        setSaved(`Deleted ${id}`);
        list.reload();
      }
    });
  }

  return (
    <section aria-labelledby="targets-h">
      <h1 id="targets-h">Targets</h1>
      <form class="card" onSubmit={save} aria-labelledby="target-form-h">
        <h2 id="target-form-h">{editing ? `Edit ${editing.id}` : 'Register a target'}</h2>
        <div class="row">
          <Field id="t-id" label="Id" error={err('path.id')}>
            <input
              id="t-id"
              value={draft.id ?? ''}
              readOnly={editing !== undefined}
              required
              spellcheck={false}
              onInput={(e) => set('id', e.currentTarget.value)}
            />
          </Field>
          <Field id="t-name" label="Name" error={err('body.name')}>
            <input
              id="t-name"
              value={draft.name ?? ''}
              required
              onInput={(e) => set('name', e.currentTarget.value)}
            />
          </Field>
          <Field id="t-kind" label="Kind">
            <select
              id="t-kind"
              value={kind}
              disabled={editing !== undefined}
              onChange={(e) => set('kind', e.currentTarget.value)}
            >
              <TargetKindOptions />
            </select>
          </Field>
          <Field id="t-cloud" label="Cloud">
            <select
              id="t-cloud"
              value={draft.cloud ?? 'local'}
              onChange={(e) => set('cloud', e.currentTarget.value)}
            >
              <CloudOptions />
            </select>
          </Field>
          {FIELDS[kind].map((f) => (
            <Field key={f.key} id={`t-${f.key}`} label={f.label} error={err(`body.${f.key}`)}>
              {f.options ? (
                <select
                  id={`t-${f.key}`}
                  value={draft[f.key] ?? f.options[0]}
                  onChange={(e) => set(f.key, e.currentTarget.value)}
                >
                  {f.options.map((o) => (
                    <option key={o} value={o}>
                      {o === '' ? '—' : o}
                    </option>
                  ))}
                </select>
              ) : (
                <input
                  id={`t-${f.key}`}
                  value={draft[f.key] ?? ''}
                  inputMode={f.number ? 'numeric' : undefined}
                  onInput={(e) => set(f.key, e.currentTarget.value)}
                />
              )}
            </Field>
          ))}
        </div>
        {problem && <ProblemView problem={problem} />}
        {saved && (
          <p class="notice" role="status">
            {saved}
          </p>
        )}
        <div class="row">
          <button type="submit">{editing ? 'Save' : 'Register'}</button>
          {editing && (
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setEditing(undefined);
                setDraft({ kind: 'vm', cloud: 'local', connection: 'ssh' });
              }}
            >
              Cancel edit
            </button>
          )}
        </div>
      </form>
      {list.problem && <ProblemView problem={list.problem} heading="Targets could not be listed" />}
      <ListTable
        label="Targets table"
        columns={['Id', 'Name', 'Kind', 'Cloud', 'Details', { hidden: 'Actions' }]}
      >
        {(list.data?.targets ?? []).map((t) => (
          <tr key={t.id}>
            <td>
              <code>{t.id}</code>
            </td>
            <td>{t.name}</td>
            <td>{t.kind}</td>
            <td>{CLOUD_LABEL[t.cloud]}</td>
            <td class="wrap">
              {describeTarget(t)}
              {t.untargetable && <span class="reason">Not a target: {t.untargetable}</span>}
            </td>
            <td class="actions">
              <button
                type="button"
                class="secondary"
                aria-label={`Edit ${t.id}`}
                onClick={() => {
                  setEditing(t);
                  setDraft(draftOf(t));
                  setProblem(undefined);
                  document.getElementById('t-name')?.focus();
                }}
              >
                Edit
              </button>
              {confirming === t.id ? (
                <button type="button" class="danger" onClick={() => remove(t.id)}>
                  Confirm delete
                </button>
              ) : (
                <button
                  type="button"
                  class="secondary"
                  aria-label={`Delete ${t.id}`}
                  onClick={() => setConfirming(t.id)}
                >
                  Delete
                </button>
              )}
            </td>
          </tr>
        ))}
      </ListTable>
    </section>
  );
}
