import { type BatchRollup, checkBatchSelection, planRetry, rollupBatch } from '../domain/batch.ts';
import { NotFoundError, NothingToRetryError, SelectionRefusedError } from '../domain/errors.ts';
import { isTerminal, newRun, type Run, transition } from '../domain/run.ts';
import { encodeRunMessage } from '../domain/run-message.ts';
import type { Target } from '../domain/target.ts';
import { type AppDeps, storageOf } from './deps.ts';
import type { SubmitBatchRequest } from './requests.ts';
import { planRun } from './runs.ts';
import {
  dropPasswords,
  keepPasswords,
  perRunSecretsProblem,
  submittedPasswords,
} from './submitted-secrets.ts';
import { lookupTarget } from './target-lookup.ts';

/** SQS SendMessageBatch takes at most 10 entries. */
const SEND_CHUNK = 10;
/** A batch has at most 50 runs; the store's page limit is 100, so this is one page in practice. */
const PAGE = 100;

export interface BatchRefusal {
  readonly targetId: string;
  /** The recorded `refused` run, so the refusal shows up in the rollup and a retry picks it up. */
  readonly runId: string;
  readonly reason: string;
}

export interface SubmittedBatch {
  readonly batchId: string;
  readonly retryOf?: string;
  /** The runs that were queued, in request order. */
  readonly runs: readonly Run[];
  /** Targets the runner rules refused (e.g. no runner configured for that cloud). */
  readonly failed: readonly BatchRefusal[];
}

/**
 * One asset × up to 50 targets. Selection problems throw before anything is
 * written (SelectionRefusedError names every offending target). Then each
 * target goes through the same runner plan as a single run: refused targets
 * are recorded as `refused` runs of the batch — so the rollup counts them and
 * a retry re-submits them once the settings are fixed — and come back in
 * `failed`; the rest are queued. All runs are written in one atomic
 * `createRuns`, then enqueued 10 per `sendBatch`. A plaintext password
 * becomes one per-run secret per queued run (each deleted when its own run
 * ends); when the runs cannot be written, they are deleted again.
 *
 * @example
 * const { batchId, runs, failed } = await submitBatch(deps, body, 'alice');
 */
export async function submitBatch(
  deps: AppDeps,
  body: SubmitBatchRequest,
  principal: string,
  options: { readonly retryOf?: string } = {},
): Promise<SubmittedBatch> {
  const unique = [...new Set(body.targetIds)];
  const rows = await Promise.all(unique.map((id) => lookupTarget(deps, id)));
  const registry = new Map<string, Target>(rows.flatMap((t) => (t === undefined ? [] : [[t.id, t]])));
  const selection = checkBatchSelection(body.kind, body.targetIds, registry);
  if (!selection.ok) {
    throw new SelectionRefusedError(
      selection.summary,
      selection.problems.map(({ targetId, reason }) => ({ targetId, reason })),
      selection.problems.map((p) => ({
        path: `body.targetIds.${p.index}`,
        message: `${p.targetId}: ${p.reason}`,
      })),
    );
  }
  const submitted = submittedPasswords(deps, body);
  // A bad or missing asset is refused before anything is written; with no active backend, planRun refuses the run.
  if (storageOf(deps).setup.active !== undefined) await deps.assets.locate(body.asset);

  const batchId = deps.newId();
  const now = deps.clock.now();
  const { targetIds: _targetIds, timeoutSeconds, ...request } = body;
  const planned = selection.targets.map((target) => {
    const draft = newRun(
      {
        ...request,
        id: deps.newId(),
        targetId: target.id,
        requestedBy: principal,
        timeoutSeconds: timeoutSeconds ?? deps.settings.default_timeout_seconds,
        batchId,
        retryOfBatch: options.retryOf,
      },
      now,
    );
    // Planned with the passwords still in the extra vars: the runner rules on plaintext passwords see them.
    const plan = planRun(deps, draft, target);
    const refusal = plan.ok ? perRunSecretsProblem(deps, submitted.passwords) : plan.reason;
    return plan.ok && refusal === undefined
      ? { ...draft, runner: plan.runner, image: plan.image }
      : transition(draft, 'refused', now, { reason: refusal ?? 'refused' });
  });
  const runs: Run[] = [];
  try {
    for (const run of planned) runs.push(await keepPasswords(deps, run, submitted));
    await deps.store.createRuns(runs);
  } catch (error) {
    await dropPasswords(deps, runs);
    throw error;
  }

  const queued = runs.filter((r) => r.state === 'queued');
  for (let i = 0; i < queued.length; i += SEND_CHUNK) {
    const chunk = queued.slice(i, i + SEND_CHUNK);
    try {
      await deps.dispatchQueue.sendBatch(chunk.map((r) => encodeRunMessage(r.id)));
    } catch (error) {
      // The runs are recorded; the reconciler re-enqueues queued runs that never reached the queue.
      deps.logger.error('batch enqueue failed; the reconciler will retry', {
        batchId,
        runIds: chunk.map((r) => r.id),
        error: error as Error,
      });
    }
  }
  deps.logger.info('batch submitted', {
    batchId,
    queued: queued.length,
    refused: runs.length - queued.length,
  });
  return {
    batchId,
    ...(options.retryOf === undefined ? {} : { retryOf: options.retryOf }),
    runs: queued,
    failed: runs.flatMap((r) =>
      r.state === 'refused'
        ? [{ targetId: r.targetId ?? '', runId: r.id, reason: r.reason ?? 'refused' }]
        : [],
    ),
  };
}

/** Every run of a batch, all pages. NotFoundError when there is none. */
async function batchRuns(deps: Pick<AppDeps, 'store'>, batchId: string): Promise<Run[]> {
  const runs: Run[] = [];
  let cursor: string | undefined;
  do {
    const page = await deps.store.listRuns({
      batchId,
      limit: PAGE,
      ...(cursor === undefined ? {} : { cursor }),
    });
    runs.push(...page.runs);
    cursor = page.nextCursor;
  } while (cursor !== undefined && cursor !== '');
  if (runs.length === 0) throw new NotFoundError(`No batch with id ${batchId}`);
  return runs;
}

/** `GET /batches/{id}`: computed from the batch's runs; no batch record is kept. */
export async function getBatch(deps: Pick<AppDeps, 'store'>, batchId: string): Promise<BatchRollup> {
  return rollupBatch(batchId, await batchRuns(deps, batchId));
}

/**
 * `POST /batches/{id}/retry`: the original request (recovered from the runs)
 * for the targets whose runs ended failed, refused, timed_out or cancelled,
 * as a new batch whose runs carry `retryOfBatch`. Runs still in flight are
 * not retried. Goes through every check a new batch does, so a target deleted
 * since, or a runner still not configured, is refused the same way.
 */
export async function retryBatch(deps: AppDeps, batchId: string, principal: string): Promise<SubmittedBatch> {
  const runs = await batchRuns(deps, batchId);
  const plan = planRetry(runs);
  if (plan === undefined) {
    const active = runs.filter((r) => !isTerminal(r.state)).length;
    throw new NothingToRetryError(
      `Nothing to retry in batch ${batchId}: no run ended failed, refused, timed_out or cancelled` +
        (active > 0 ? ` (${active} still in flight)` : ''),
    );
  }
  const { request } = plan;
  const [plaintext] = runs.flatMap((r) => r.ephemeralSecrets ?? []);
  if (plaintext !== undefined) {
    // Its value was held only for the lifetime of each run, and they have ended.
    throw new NothingToRetryError(
      `Batch ${batchId} was submitted with a plaintext ${plaintext}, which was deleted when its runs ended: submit the batch again with it, or bind ${plaintext} to a named secret`,
    );
  }
  const body: SubmitBatchRequest = {
    kind: request.kind,
    targetIds: [...plan.targetIds],
    asset: request.asset,
    extraVars: { ...request.extraVars },
    secrets: request.secrets.map((s) => ({ ...s })),
    ...(request.operation === undefined ? {} : { operation: request.operation }),
    ...(request.sshUser === undefined ? {} : { sshUser: request.sshUser }),
    ...(request.managedAccount === undefined ? {} : { managedAccount: request.managedAccount }),
    timeoutSeconds: request.timeoutSeconds,
  };
  return submitBatch(deps, body, principal, { retryOf: batchId });
}
