import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { api, type Run, TERMINAL_STATES } from '../api/client.ts';
import { StateBadge } from '../components/badges.tsx';
import { LogView } from '../components/log-view.tsx';
import { ProblemView } from '../components/problem.tsx';
import { duration, when } from '../format.ts';
import { useAction, usePollOne } from '../hooks.ts';
import { DEFAULT_MASK } from '../mask.ts';
import { href } from '../router.ts';

/** One term of a `<dl>` and its value, as every row of the run's details and timings shows them. */
const Kv = ({ label, children }: { label: string; children: ComponentChildren }) => (
  <div>
    <dt>{label}</dt>
    <dd>{children}</dd>
  </div>
);

function ExtraVars({ vars }: { vars: Run['extraVars'] }) {
  const entries = Object.entries(vars);
  if (entries.length === 0) return <span class="hint">none</span>;
  return (
    <dl class="kv">
      {entries.map(([name, value]) => (
        <div key={name}>
          <dt>
            <code>{name}</code>
          </dt>
          <dd>
            {value === DEFAULT_MASK ? (
              <mark class="masked" title="masked by the server">
                {DEFAULT_MASK}
              </mark>
            ) : (
              <code class="wrap">{JSON.stringify(value)}</code>
            )}
          </dd>
        </div>
      ))}
    </dl>
  );
}

export function RunDetailPage({ id }: { id: string }) {
  const [run, setRun] = useState<Run>();
  const { busy: cancelling, problem, setProblem, request } = useAction();

  usePollOne(
    (signal) => api.GET('/runs/{id}', { params: { path: { id } }, signal }),
    (data) => {
      setRun(data);
      return !TERMINAL_STATES.has(data.state);
    },
    setProblem,
    1500,
    [id],
  );

  function cancel() {
    setProblem(undefined);
    return request(() => api.POST('/runs/{id}/cancel', { params: { path: { id } } }), setRun);
  }

  if (!run) {
    return (
      <section>
        <h1>
          Run <code>{id}</code>
        </h1>
        {problem ? <ProblemView problem={problem} /> : <p>Loading…</p>}
      </section>
    );
  }
  const ended = TERMINAL_STATES.has(run.state);
  const t = run.timings;
  return (
    <section aria-labelledby="run-h">
      <div class="page-head">
        <h1 id="run-h">
          Run <code>{run.id}</code>
        </h1>
        <span data-testid="run-state" aria-live="polite">
          <StateBadge state={run.state} />
        </span>
        {!ended && (
          <button type="button" class="danger" onClick={cancel} disabled={cancelling || run.cancelRequested}>
            {run.cancelRequested ? 'Cancel requested' : cancelling ? 'Cancelling…' : 'Cancel run'}
          </button>
        )}
      </div>
      {problem && <ProblemView problem={problem} />}
      {run.reason !== undefined && (
        <p class={run.state === 'succeeded' ? 'notice' : 'notice warn'} data-testid="run-reason">
          <strong>Reason:</strong> {run.reason}
        </p>
      )}
      <div class="grid">
        <dl class="kv card">
          <Kv label="Kind">{run.kind}</Kv>
          <Kv label="Target">{run.targetId ?? '—'}</Kv>
          <div>
            <dt>Asset</dt>
            <dd>
              <code>{run.asset}</code>
            </dd>
          </div>
          <div>
            <dt>Runner</dt>
            <dd>
              {run.runner ?? '—'}
              {run.image ? ` · ${run.image}` : ''}
            </dd>
          </div>
          <div>
            <dt>Exit code</dt>
            <dd data-testid="exit-code">{run.exitCode ?? '—'}</dd>
          </div>
          <Kv label="Requested by">{run.requestedBy}</Kv>
          <Kv label="Timeout">{duration(run.timeoutSeconds * 1000)}</Kv>
          {run.sshUser && <Kv label="SSH user">{run.sshUser}</Kv>}
          {run.managedAccount && <Kv label="Managed account">{run.managedAccount}</Kv>}
          {run.batchId && (
            <div>
              <dt>Batch</dt>
              <dd>
                <a href={href(`/batches/${encodeURIComponent(run.batchId)}`)}>{run.batchId}</a>
              </dd>
            </div>
          )}
          <Kv label="Attempt">{run.attempt}</Kv>
        </dl>
        <dl class="kv card" aria-label="Timings">
          <Kv label="Queue wait">{duration(t.queueWaitMs)}</Kv>
          <Kv label="Launch latency">{duration(t.launchLatencyMs)}</Kv>
          <Kv label="Start latency">{duration(t.startLatencyMs)}</Kv>
          <Kv label="Run time">{duration(t.runTimeMs)}</Kv>
          {t.notStartedReason && <Kv label="Not started">{t.notStartedReason}</Kv>}
        </dl>
      </div>
      <div class="grid">
        <div class="card">
          <h2>State history</h2>
          <ol class="history">
            {run.history.map((h, i) => (
              <li key={i}>
                <StateBadge state={h.state} /> <time dateTime={h.at}>{when(h.at)}</time>
                {h.reason && <span class="hint"> — {h.reason}</span>}
              </li>
            ))}
          </ol>
        </div>
        <div class="card">
          <h2>Extra vars</h2>
          <ExtraVars vars={run.extraVars} />
          <h2>Secret bindings</h2>
          {run.secrets.length === 0 ? (
            <span class="hint">none</span>
          ) : (
            <ul>
              {run.secrets.map((s) => (
                <li key={s.var}>
                  <code>{s.var}</code> ← secret <code>{s.secret}</code>{' '}
                  <span class="hint">(value never shown)</span>
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
      {run.state !== 'refused' && <LogView runId={run.id} />}
    </section>
  );
}
