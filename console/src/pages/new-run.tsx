import { useRef, useState } from 'preact/hooks';
import { api, RUN_KINDS, type Run, type RunKind, type SubmitRunRequest } from '../api/client.ts';
import { checkExtraVars, ExtraVarsField } from '../components/extra-vars.tsx';
import { AssetPicker, TARGET_KIND_FOR, TargetPicker, ValueOptions, whyNot } from '../components/pickers.tsx';
import { FieldMessage, fieldError, ProblemView } from '../components/problem.tsx';
import { SshUserField, TimeoutField } from '../components/run-fields.tsx';
import { type Binding, SecretBindings } from '../components/secret-bindings.tsx';
import { useAction, useLoad } from '../hooks.ts';
import { href, navigate } from '../router.ts';

type Operation = NonNullable<SubmitRunRequest['operation']>;
const ACTIONS: readonly Operation['action'][] = [
  'apply',
  'delete',
  'get_secret',
  'helm_repo_add',
  'helm_upgrade',
];
/** The fields each kubectl/helm action takes, in the order the form shows them. */
const ACTION_FIELDS: Record<
  Operation['action'],
  readonly { key: string; label: string; required: boolean }[]
> = {
  apply: [{ key: 'namespace', label: 'Namespace', required: false }],
  delete: [{ key: 'namespace', label: 'Namespace', required: false }],
  get_secret: [
    { key: 'namespace', label: 'Namespace', required: true },
    { key: 'name', label: 'Secret name', required: true },
  ],
  helm_repo_add: [
    { key: 'repoName', label: 'Repository name', required: true },
    { key: 'repoUrl', label: 'Repository URL', required: true },
  ],
  helm_upgrade: [
    { key: 'release', label: 'Release', required: true },
    { key: 'chart', label: 'Chart', required: true },
    { key: 'namespace', label: 'Namespace', required: false },
    { key: 'version', label: 'Version', required: false },
  ],
};

export function NewRunPage({ query }: { query: URLSearchParams }) {
  const targets = useLoad(() => api.GET('/targets'));
  const assets = useLoad(() => api.GET('/assets'));
  const [kind, setKind] = useState<RunKind>(
    (RUN_KINDS as string[]).includes(query.get('kind') ?? '') ? (query.get('kind') as RunKind) : 'vm',
  );
  const [targetId, setTargetId] = useState(query.get('target') ?? '');
  const [asset, setAsset] = useState(query.get('asset') ?? '');
  const [varsText, setVarsText] = useState('');
  const [bindings, setBindings] = useState<Binding[]>([]);
  const [sshUser, setSshUser] = useState('');
  const [managedAccount, setManagedAccount] = useState('');
  const [timeout, setTimeoutText] = useState('');
  const [action, setAction] = useState<Operation['action']>('apply');
  const [opFields, setOpFields] = useState<Record<string, string>>({});
  const { busy, problem, setProblem, request } = useAction();
  const [refused, setRefused] = useState<Run>();
  // One key per distinct body: a double submit is one run, an edited body is a new request.
  const idempotency = useRef<{ body: string; key: string }>();

  const needsTarget = TARGET_KIND_FOR[kind] !== undefined;
  const chosenTarget = targets.data?.targets.find((t) => t.id === targetId);
  const assetType = assets.data?.assets.find((a) => a.path === asset)?.type;

  async function submit(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    setRefused(undefined);
    const vars = await checkExtraVars(varsText);
    const local: { path: string; message: string }[] = [];
    if (!vars.ok) local.push({ path: 'body.extraVars', message: vars.message });
    if (needsTarget && !chosenTarget) local.push({ path: 'body.targetId', message: 'Pick a target' });
    if (chosenTarget && whyNot(chosenTarget, kind))
      local.push({ path: 'body.targetId', message: whyNot(chosenTarget, kind) ?? '' });
    if (asset === '') local.push({ path: 'body.asset', message: 'Pick an asset' });
    if (timeout !== '' && !/^[1-9]\d*$/.test(timeout))
      local.push({ path: 'body.timeoutSeconds', message: 'Whole seconds, at least 1' });
    if (local.length > 0) {
      setProblem({
        type: 'about:blank',
        title: 'Check the form',
        status: 0,
        detail: 'Nothing was sent.',
        errors: local,
      });
      return;
    }
    const body: SubmitRunRequest = {
      kind,
      asset,
      ...(needsTarget ? { targetId } : {}),
      ...(vars.ok && Object.keys(vars.value).length > 0 ? { extraVars: vars.value } : {}),
      ...(bindings.length > 0 ? { secrets: bindings } : {}),
      ...(sshUser.trim() ? { sshUser: sshUser.trim() } : {}),
      ...(managedAccount.trim() ? { managedAccount: managedAccount.trim() } : {}),
      ...(timeout ? { timeoutSeconds: Number(timeout) } : {}),
      ...(kind === 'k8s_op' ? { operation: operationBody(action, opFields) } : {}),
    };
    const text = JSON.stringify(body);
    if (idempotency.current?.body !== text) idempotency.current = { body: text, key: crypto.randomUUID() };
    const key = idempotency.current.key;
    await request(
      () => api.POST('/runs', { body, headers: { 'idempotency-key': key } }),
      (data) =>
        data.state === 'refused' ? setRefused(data) : navigate(`/runs/${encodeURIComponent(data.id)}`),
    );
  }

  const err = (path: string) => fieldError(problem, path);
  return (
    <section aria-labelledby="new-h">
      <h1 id="new-h">New run</h1>
      {targets.problem && <ProblemView problem={targets.problem} heading="Targets could not be listed" />}
      {assets.problem && <ProblemView problem={assets.problem} heading="Assets could not be listed" />}
      <form onSubmit={submit} class="run-form" noValidate>
        <div class="field">
          <label for="kind">Kind</label>
          <select id="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as RunKind)}>
            <ValueOptions values={RUN_KINDS} />
          </select>
        </div>
        {needsTarget ? (
          <>
            <TargetPicker
              targets={targets.data?.targets ?? []}
              kind={kind}
              value={targetId}
              onChange={setTargetId}
              invalid={err('body.targetId')}
            />
            <FieldMessage id="target-error" message={err('body.targetId')} />
          </>
        ) : (
          <p class="hint">A portainer run goes to the one configured Portainer connection: no target.</p>
        )}
        <AssetPicker assets={assets.data?.assets ?? []} value={asset} onChange={setAsset} />
        <FieldMessage id="asset-error" message={err('body.asset')} />
        {kind === 'k8s_op' && (
          <fieldset>
            <legend>Operation</legend>
            <div class="field">
              <label for="action">Action</label>
              <select
                id="action"
                value={action}
                onChange={(e) => setAction(e.currentTarget.value as Operation['action'])}
              >
                <ValueOptions values={ACTIONS} />
              </select>
            </div>
            {ACTION_FIELDS[action].map((f) => (
              <div class="field" key={f.key}>
                <label for={`op-${f.key}`}>
                  {f.label}
                  {f.required ? '' : ' (optional)'}
                </label>
                <input
                  id={`op-${f.key}`}
                  value={opFields[f.key] ?? ''}
                  required={f.required}
                  onInput={(e) => setOpFields({ ...opFields, [f.key]: e.currentTarget.value })}
                />
                <FieldMessage id={`op-${f.key}-error`} message={err(`body.operation.${f.key}`)} />
              </div>
            ))}
          </fieldset>
        )}
        <ExtraVarsField
          id="extra-vars"
          text={varsText}
          onText={setVarsText}
          assetType={assetType}
          serverError={err('body.extraVars')}
        />
        <SecretBindings bindings={bindings} onChange={setBindings} problem={problem} />
        <div class="row">
          {(kind === 'vm' || kind === 'portainer') && (
            <SshUserField id="ssh-user" value={sshUser} onText={setSshUser} error={err('body.sshUser')} />
          )}
          <div class="field">
            <label for="managed-account">Managed account (optional)</label>
            <input
              id="managed-account"
              value={managedAccount}
              onInput={(e) => setManagedAccount(e.currentTarget.value)}
              aria-describedby="managed-account-help"
            />
            <span class="hint" id="managed-account-help">
              Checked out just in time from the credential broker and checked in when the run ends.
            </span>
            <FieldMessage id="managed-account-error" message={err('body.managedAccount')} />
          </div>
          <TimeoutField
            id="timeout"
            value={timeout}
            onText={setTimeoutText}
            error={err('body.timeoutSeconds')}
          />
        </div>
        {problem && <ProblemView problem={problem} />}
        {refused && (
          <div class="problem" role="alert" data-testid="refused">
            <strong>The run was refused.</strong>
            <p class="problem-detail">{refused.reason}</p>
            <a href={href(`/runs/${encodeURIComponent(refused.id)}`)}>Open the refused run</a>
          </div>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Submitting…' : 'Submit run'}
        </button>
      </form>
    </section>
  );
}

function operationBody(action: Operation['action'], fields: Record<string, string>): Operation {
  const picked: Record<string, string> = {};
  for (const f of ACTION_FIELDS[action]) {
    const value = fields[f.key]?.trim();
    if (value) picked[f.key] = value;
  }
  return { action, ...picked } as Operation;
}
