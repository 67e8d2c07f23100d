import { RUNNER_NAMES } from '../domain/asset-access.ts';
import {
  InvalidTransitionError,
  NotFoundError,
  RunnerRefusedError,
  ValidationError,
} from '../domain/errors.ts';
import {
  isRelayOwner,
  isTerminal,
  newRun,
  type Run,
  type Runner,
  requestCancel,
  transition,
} from '../domain/run.ts';
import { encodeRunMessage } from '../domain/run-message.ts';
import { resolveRunner } from '../domain/runner-resolution.ts';
import { selectionProblem } from '../domain/selection.ts';
import type { Target } from '../domain/target.ts';
import { assetAccessProblem } from './asset-access.ts';
import { releaseRun } from './credentials.ts';
import { type AppDeps, storageOf } from './deps.ts';
import { requestFingerprint } from './fingerprint.ts';
import { hypervisorPlanProblem } from './hypervisor-plan.ts';
import type { SubmitRunRequest } from './requests.ts';
import { mutateRun } from './run-updates.ts';
import {
  dropPasswords,
  keepPasswords,
  perRunSecretsProblem,
  submittedPasswords,
} from './submitted-secrets.ts';
import { lookupTarget } from './target-lookup.ts';

export type Plan =
  | { readonly ok: true; readonly runner: Runner; readonly image: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Decide where a run executes: the seeds' resolution rules, then whether this
 * deployment has a launcher for the resolved backend and whether that
 * runner's task can read the asset from the active storage backend. Used at
 * submit and again at dispatch, so a settings change in between is honoured.
 */
export function planRun(
  deps: Pick<AppDeps, 'settings' | 'launchers' | 'relay' | 'assets' | 'storage'>,
  run: Pick<Run, 'kind' | 'extraVars' | 'secrets' | 'asset' | 'ephemeralSecrets'>,
  target: Target | undefined,
): Plan {
  const resolved = resolveRunner(
    {
      kind: run.kind,
      ...(target === undefined ? {} : { target }),
      extraVars: run.extraVars,
      secrets: run.secrets,
      plaintextVars: run.ephemeralSecrets,
    },
    deps.settings,
    {
      relayAvailable: deps.relay.available,
      ...(deps.relay.reason === undefined ? {} : { relayUnavailableReason: deps.relay.reason }),
    },
  );
  if (!resolved.ok) return { ok: false, reason: resolved.reason };
  const hypervisor = target === undefined ? undefined : hypervisorPlanProblem(deps.settings, target);
  if (hypervisor !== undefined) return { ok: false, reason: hypervisor };
  if (deps.launchers[resolved.runner] === undefined) {
    return {
      ok: false,
      reason: `The ${RUNNER_NAMES[resolved.runner]} runner is not available in this deployment: no launcher for it is configured`,
    };
  }
  const unreadable = assetAccessProblem(storageOf(deps), resolved.runner);
  if (unreadable !== undefined) return { ok: false, reason: unreadable };
  return { ok: true, runner: resolved.runner, image: resolved.image };
}

async function loadSelectedTarget(deps: AppDeps, body: Pick<SubmitRunRequest, 'kind' | 'targetId'>) {
  const target = body.targetId === undefined ? undefined : await lookupTarget(deps, body.targetId);
  const problem = selectionProblem(body.kind, target, body.targetId);
  if (problem !== undefined) {
    if (body.targetId !== undefined && target === undefined) {
      throw new ValidationError(problem, [{ path: 'body.targetId', message: problem }]);
    }
    throw new RunnerRefusedError(problem);
  }
  return target;
}

export interface SubmitResult {
  readonly run: Run;
  readonly created: boolean;
}

/**
 * Validate a run against the registry, the asset store and the runner rules,
 * record it and enqueue it. Selection problems and bad assets throw before
 * anything is written; a runner refusal is recorded as a `refused` run.
 *
 * Plaintext passwords (`ansible_password` …) never reach the record: a
 * queued run's go to the per-run secret store first and the run binds their
 * names. A retried submit (same Idempotency-Key) answers the first run and
 * deletes the copy it made before answering, so no second secret outlives
 * the request and none is left without a run.
 */
export async function submitRun(
  deps: AppDeps,
  body: SubmitRunRequest,
  principal: string,
  options: { idempotencyKey?: string; batchId?: string } = {},
): Promise<SubmitResult> {
  const target = await loadSelectedTarget(deps, body);
  const submitted = submittedPasswords(deps, body);
  // A bad or missing asset is refused before anything is written; with no active backend, planRun refuses the run.
  if (storageOf(deps).setup.active !== undefined) await deps.assets.locate(body.asset);

  const now = deps.clock.now();
  const { timeoutSeconds, ...rest } = body;
  const draft = newRun(
    {
      ...rest,
      id: deps.newId(),
      requestedBy: principal,
      timeoutSeconds: timeoutSeconds ?? deps.settings.default_timeout_seconds,
      ...(options.batchId === undefined ? {} : { batchId: options.batchId }),
    },
    now,
  );
  // Planned with the passwords still in the extra vars: the runner rules on plaintext passwords see them.
  const plan = planRun(deps, draft, target);
  const refusal = plan.ok ? perRunSecretsProblem(deps, submitted.passwords) : plan.reason;
  const planned =
    plan.ok && refusal === undefined
      ? { ...draft, runner: plan.runner, image: plan.image }
      : transition(draft, 'refused', now, { reason: refusal ?? 'refused' });
  const run = await keepPasswords(deps, planned, submitted);

  const announce = encodeRunMessage(run.id);
  let created: SubmitResult & { readonly enqueued?: boolean };
  try {
    created = await deps.store.createRun(run, {
      ...(options.idempotencyKey === undefined
        ? {}
        : { idempotencyKey: options.idempotencyKey, fingerprint: requestFingerprint(body) }),
      // A store sharing a transaction with the queue sends it in the run's own commit (local mode).
      ...(run.state === 'queued' ? { enqueue: { queue: deps.dispatchQueue, body: announce } } : {}),
    });
  } catch (error) {
    await dropPasswords(deps, [run]);
    throw error;
  }
  if (!created.created) await dropPasswords(deps, [run]);
  if (created.created && created.run.state === 'queued' && created.enqueued !== true) {
    try {
      await deps.dispatchQueue.send(announce);
    } catch (error) {
      // The run is recorded; the reconciler re-enqueues queued runs that never reached the queue.
      deps.logger.error('enqueue failed; the reconciler will retry', {
        runId: created.run.id,
        error: error as Error,
      });
    }
  }
  const { enqueued: _enqueued, ...answer } = created;
  return answer;
}

export async function getRun(deps: Pick<AppDeps, 'store'>, id: string): Promise<Run> {
  const run = await deps.store.getRun(id);
  if (run === undefined) throw new NotFoundError(`No run with id ${id}`);
  return run;
}

/** How long a cloud task gets between the stop request and being killed. */
const CANCEL_GRACE_SECONDS = 30;

/**
 * Flag the run for cancellation. A run nothing has started yet — queued, or
 * handed to the relay queue but not claimed by a relay — is cancelled at once.
 * A cloud task is asked to stop right away; its backend's status (events or
 * the reconciler's sweep) then settles the run `cancelled`. The relay polls
 * the flag itself. A stop request that fails is retried by the reconciler.
 * A run already terminal is refused with InvalidTransitionError (409): an
 * unchanged run answered as accepted would tell the client its cancel worked.
 */
export async function cancelRun(
  deps: Pick<AppDeps, 'store' | 'clock'> &
    Partial<Pick<AppDeps, 'launchers' | 'logger' | 'runSecrets' | 'credentials'>>,
  id: string,
): Promise<Run> {
  const run = await mutateRun(deps.store, id, (current) => {
    if (isTerminal(current.state)) {
      throw new InvalidTransitionError(
        `Run ${current.id} is ${current.state} and can no longer be cancelled`,
      );
    }
    const flagged = requestCancel(current, deps.clock.now());
    if (flagged.state === 'launched' && flagged.launch?.backend === 'local' && !isRelayOwner(flagged.owner)) {
      return transition(flagged, 'cancelled', deps.clock.now(), {
        reason: 'Cancelled before a relay took it',
      });
    }
    return flagged;
  });
  if (isTerminal(run.state)) {
    // Cancelled before anything started: nothing can still use its per-run secrets or hold.
    await releaseRun(deps, run);
    return run;
  }
  const handle = run.launch?.handle;
  const launcher = run.launch === undefined ? undefined : deps.launchers?.[run.launch.backend];
  if (
    !isTerminal(run.state) &&
    run.cancelRequested &&
    handle !== undefined &&
    run.launch?.backend !== 'local'
  ) {
    await launcher?.cancel(handle, run, CANCEL_GRACE_SECONDS).catch((error: unknown) => {
      deps.logger?.warn('cancel: the backend did not take the stop request; the reconciler retries', {
        runId: run.id,
        error: error as Error,
      });
    });
  }
  return run;
}
