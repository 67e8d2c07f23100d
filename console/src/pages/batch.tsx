import { useState } from 'preact/hooks';
import { api, type BatchRollup, RUN_STATES } from '../api/client.ts';
import { StateBadge } from '../components/badges.tsx';
import { NamedList, ProblemView } from '../components/problem.tsx';
import { type Flash, openQueuedBatch, takeFlash } from '../flash.ts';
import { useAction, usePollOne } from '../hooks.ts';
import { href } from '../router.ts';

/** A batch's rollup (polled until every run has ended), what queueing it refused, and retry of the failed. */
export function BatchPanel({ batchId }: { batchId: string }) {
  const [rollup, setRollup] = useState<BatchRollup>();
  const { busy: retrying, problem, setProblem, request } = useAction();
  const [flash] = useState<Flash | undefined>(() => takeFlash(batchId));

  usePollOne(
    (signal) => api.GET('/batches/{id}', { params: { path: { id: batchId } }, signal }),
    (data) => {
      setRollup(data);
      setProblem(undefined);
      return !data.complete;
    },
    setProblem,
    2000,
    [batchId],
  );

  const retry = () =>
    request(() => api.POST('/batches/{id}/retry', { params: { path: { id: batchId } } }), openQueuedBatch);

  return (
    <section class="card batch" aria-labelledby="batch-h">
      <h2 id="batch-h">
        Batch <code>{batchId}</code>
      </h2>
      {flash && (
        <div class={flash.failed.length > 0 ? 'notice warn' : 'notice'} role="status">
          Queued {flash.queued} run{flash.queued === 1 ? '' : 's'}.
          {flash.failed.length > 0 && (
            <>
              {' '}
              {flash.failed.length} target{flash.failed.length === 1 ? ' was' : 's were'} refused:
              <NamedList items={flash.failed.map((f) => [f.targetId, f.reason])} />
            </>
          )}
        </div>
      )}
      {problem && <ProblemView problem={problem} />}
      {rollup && (
        <>
          <p>
            {rollup.kind} · <code>{rollup.asset}</code> · {rollup.total} run{rollup.total === 1 ? '' : 's'}
            {rollup.retryOf && (
              <>
                {' '}
                · retry of{' '}
                <a href={href(`/batches/${encodeURIComponent(rollup.retryOf)}`)}>{rollup.retryOf}</a>
              </>
            )}
            {' · '}
            <span role="status" aria-live="polite">
              {rollup.complete ? 'complete' : 'in progress'}
            </span>
          </p>
          <RollupBar rollup={rollup} />
          <ul class="counts" aria-label="Runs by state">
            {RUN_STATES.filter((s) => rollup.counts[s] > 0).map((s) => (
              <li key={s}>
                <StateBadge state={s} /> <span data-count={s}>{rollup.counts[s]}</span>
              </li>
            ))}
          </ul>
          {rollup.failed.length > 0 && (
            <>
              <h3>Failed ({rollup.failed.length})</h3>
              <ul class="failed-list">
                {rollup.failed.map((f) => (
                  <li key={f.runId}>
                    <a href={href(`/runs/${encodeURIComponent(f.runId)}`)}>{f.targetId ?? f.runId}</a>{' '}
                    <StateBadge state={f.state} /> {f.reason}
                  </li>
                ))}
              </ul>
            </>
          )}
          <button type="button" onClick={retry} disabled={retrying || rollup.failed.length === 0}>
            {retrying ? 'Retrying…' : `Retry failed (${rollup.failed.length})`}
          </button>
        </>
      )}
    </section>
  );
}

/** Proportions at a glance; the counts beside it carry the same numbers as text. */
function RollupBar({ rollup }: { rollup: BatchRollup }) {
  return (
    <div class="rollup-bar" aria-hidden="true">
      {RUN_STATES.filter((s) => rollup.counts[s] > 0).map((s) => (
        <span key={s} class={`seg state-${s}`} style={{ flexGrow: rollup.counts[s] }} />
      ))}
    </div>
  );
}
