import * as z from '../lib/zod.ts';
import { ENV_NAME } from './env-name.ts';
import { InvalidTransitionError } from './errors.ts';
import { isBudgetWaitReason } from './launch-budget.ts';
import type { RunKind } from './run-kind.ts';
import { isTerminal, type RunState } from './run-state.ts';

export { RUN_KINDS, type RunKind } from './run-kind.ts';
export { isTerminal, RUN_STATES, type RunState, TERMINAL_STATES } from './run-state.ts';

/** Where a run executes. `local` means the relay (in-process in local mode, the on-prem agent in AWS). */
export const RUNNERS = ['local', 'ecs', 'aci', 'gcp', 'kubernetes'] as const;
export type Runner = (typeof RUNNERS)[number];

/**
 * Allowed moves. `launched → succeeded|failed` covers tasks that finish before
 * anyone observes them running; any non-terminal state may fail, be cancelled
 * or time out. Terminal states have no way out.
 */
const TRANSITIONS: Record<RunState, readonly RunState[]> = {
  queued: ['dispatching', 'refused', 'failed', 'cancelled', 'timed_out'],
  dispatching: ['queued', 'launched', 'refused', 'failed', 'cancelled', 'timed_out'],
  launched: ['running', 'succeeded', 'failed', 'cancelled', 'timed_out'],
  running: ['succeeded', 'failed', 'cancelled', 'timed_out'],
  succeeded: [],
  failed: [],
  cancelled: [],
  timed_out: [],
  refused: [],
};

export const canTransition = (from: RunState, to: RunState): boolean => TRANSITIONS[from].includes(to);

/*
 * The schemas below are built on first use (z.lazy), not when this module
 * loads: every function imports run.ts for the state machine, and only the
 * submit routes and the OpenAPI document parse with them. Each zod schema
 * costs real work to build (a small object schema about 0.2 ms of CPU in a
 * cold process on the bench machine), which every Lambda cold start paid for
 * nothing (target.ts says how much with its body schemas).
 */

/** A named secret bound to a play variable ("Use a secret"). Only the name is stored. */
export const SecretBindingSchema = z.lazy(() =>
  z.strictObject({
    var: z
      .string()
      .check(z.minLength(1), z.maxLength(128), z.regex(ENV_NAME, 'must be a valid variable name')),
    secret: z.textBetween(1, 512),
  }),
);
export type SecretBinding = z.infer<typeof SecretBindingSchema>;

/** A kubectl/helm operation (k8s_op runs). Arguments are passed as argv, never through a shell. */
export const K8sOperationSchema = z.lazy(() =>
  z.discriminatedUnion('action', [
    z.strictObject({ action: z.literal('apply'), namespace: z.optional(z.textBetween(1, 63)) }),
    z.strictObject({ action: z.literal('delete'), namespace: z.optional(z.textBetween(1, 63)) }),
    z.strictObject({
      action: z.literal('get_secret'),
      namespace: z.textBetween(1, 63),
      name: z.textBetween(1, 253),
    }),
    z.strictObject({
      action: z.literal('helm_repo_add'),
      repoName: z.textBetween(1, 63),
      repoUrl: z.url(),
    }),
    z.strictObject({
      action: z.literal('helm_upgrade'),
      release: z.textBetween(1, 53),
      chart: z.textBetween(1, 512),
      namespace: z.optional(z.textBetween(1, 63)),
      version: z.optional(z.textBetween(1, 64)),
    }),
  ]),
);
export type K8sOperation = z.infer<typeof K8sOperationSchema>;

export interface StateChange {
  readonly state: RunState;
  readonly at: string;
  readonly reason?: string;
}

/** Launch bookkeeping: the intent is written before the backend is called, the handle after. */
export interface LaunchRecord {
  readonly backend: Runner;
  readonly intentAt: string;
  /** Opaque to everyone but the adapter, e.g. `ecs:<cluster>/<taskArn>`, `relay:<runId>`. */
  readonly handle?: string;
}

export interface Run {
  readonly id: string;
  readonly kind: RunKind;
  readonly targetId?: string;
  readonly asset: string;
  readonly extraVars: Readonly<Record<string, unknown>>;
  readonly secrets: readonly SecretBinding[];
  /**
   * Variables of `secrets` bound to a per-run secret made at submit from a
   * plaintext extra var (`ansible_password` …): the value lives in the mode's
   * secret store until the run ends, and the runner rules treat these as the
   * plaintext extra vars they were.
   */
  readonly ephemeralSecrets?: readonly string[];
  readonly operation?: K8sOperation;
  readonly sshUser?: string;
  readonly managedAccount?: string;
  readonly batchId?: string;
  /** Set on the runs of a batch made by `POST /batches/{id}/retry`: the batch it retried. */
  readonly retryOfBatch?: string;
  readonly requestedBy: string;
  readonly timeoutSeconds: number;
  readonly runner?: Runner;
  readonly image?: string;
  readonly state: RunState;
  readonly history: readonly StateChange[];
  /** Dispatch attempts so far; part of the backend idempotency key. */
  readonly attempt: number;
  /** Bumped on every write; writes are conditional on it. */
  readonly version: number;
  /** Who holds the current claim (dispatcher or relay id + epoch). */
  readonly owner?: string;
  readonly launch?: LaunchRecord;
  readonly cancelRequested: boolean;
  /** When the cancel was asked for: the start of the backend's deadline to confirm it. */
  readonly cancelRequestedAt?: string;
  /**
   * Since when a polled backend has failed to say how the task is doing
   * (errors, throttling). Cleared by the next answer; past the grace the run fails.
   */
  readonly statusUnknownSince?: string;
  /** A just-in-time credential checkout (Password Safe request id, not a secret) to check in when the run ends. */
  readonly credentialLease?: string;
  /**
   * The Password Safe managed account this run holds (`<system>/<account>`),
   * taken at dispatch so that runs on one account never share a checkout.
   */
  readonly heldAccount?: string;
  readonly exitCode?: number;
  readonly reason?: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Owner prefix a relay writes when it claims a run; before that, nothing has started on the relay. */
export const RELAY_OWNER_PREFIX = 'relay:';
export const isRelayOwner = (owner: string | undefined): boolean =>
  owner?.startsWith(RELAY_OWNER_PREFIX) ?? false;

export type RunPatch = Partial<
  Pick<
    Run,
    | 'runner'
    | 'image'
    | 'owner'
    | 'launch'
    | 'exitCode'
    | 'attempt'
    | 'cancelRequested'
    | 'cancelRequestedAt'
    | 'statusUnknownSince'
    | 'credentialLease'
    | 'heldAccount'
  >
>;

/**
 * Move a run to `to`, returning the next version. Throws InvalidTransitionError
 * for a move the state machine forbids; a terminal run never changes.
 */
export function transition(
  run: Run,
  to: RunState,
  at: string,
  options: { reason?: string; patch?: RunPatch } = {},
): Run {
  if (!canTransition(run.state, to)) {
    throw new InvalidTransitionError(`Run ${run.id} cannot move from ${run.state} to ${to}`);
  }
  const change: StateChange =
    options.reason === undefined ? { state: to, at } : { state: to, at, reason: options.reason };
  // A launch-budget wait (`waiting: ECS launch budget`) ends with the state it was noted in.
  const { reason: waited, ...rest } = run;
  const next: Run = {
    ...(isBudgetWaitReason(waited) ? rest : run),
    ...options.patch,
    state: to,
    history: [...run.history, change],
    version: run.version + 1,
    updatedAt: at,
  };
  if (options.reason !== undefined && (isTerminal(to) || to === 'queued')) {
    return { ...next, reason: options.reason };
  }
  return next;
}

/** Change fields without a state move (launch intent, handle, owner), still bumping the version. */
export function amend(run: Run, at: string, patch: RunPatch): Run {
  if (isTerminal(run.state)) {
    throw new InvalidTransitionError(`Run ${run.id} is ${run.state} and can no longer change`);
  }
  return { ...run, ...patch, version: run.version + 1, updatedAt: at };
}

/**
 * Note whether a polled backend answered about the run's task. The first
 * failure records when the silence began; the next answer clears it. Returns
 * the same run when nothing changes, so callers write nothing.
 */
export function noteStatusUnknown(run: Run, at: string, unknown: boolean): Run {
  if (isTerminal(run.state)) return run;
  if (unknown) return run.statusUnknownSince === undefined ? amend(run, at, { statusUnknownSince: at }) : run;
  if (run.statusUnknownSince === undefined) return run;
  const { statusUnknownSince: _cleared, ...known } = run;
  return { ...known, version: run.version + 1, updatedAt: at };
}

/**
 * Record a cancel request. A run that has not been claimed yet is cancelled
 * at once (it never starts); otherwise the flag is set and whoever holds the
 * run honours it at its next step. Terminal runs are returned unchanged.
 */
export function requestCancel(run: Run, at: string): Run {
  if (isTerminal(run.state) || run.cancelRequested) return run;
  if (run.state === 'queued') {
    return transition(run, 'cancelled', at, {
      reason: 'Cancelled before it started',
      patch: { cancelRequested: true, cancelRequestedAt: at },
    });
  }
  return amend(run, at, { cancelRequested: true, cancelRequestedAt: at });
}

/** When the run is due to end, counted from its first claim (or creation when never claimed). */
export function deadlineOf(run: Run): number {
  const started = run.history.find((h) => h.state === 'dispatching')?.at ?? run.createdAt;
  return Date.parse(started) + run.timeoutSeconds * 1000;
}

export interface NewRun {
  readonly id: string;
  readonly kind: RunKind;
  readonly targetId?: string | undefined;
  readonly asset: string;
  readonly extraVars?: Readonly<Record<string, unknown>> | undefined;
  readonly secrets?: readonly SecretBinding[] | undefined;
  readonly ephemeralSecrets?: readonly string[] | undefined;
  readonly operation?: K8sOperation | undefined;
  readonly sshUser?: string | undefined;
  readonly managedAccount?: string | undefined;
  readonly batchId?: string | undefined;
  readonly retryOfBatch?: string | undefined;
  readonly requestedBy: string;
  readonly timeoutSeconds: number;
}

export function newRun(input: NewRun, at: string): Run {
  const { extraVars, secrets, ...rest } = input;
  // Drop absent optionals so records stay free of `undefined` keys.
  const defined = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined)) as typeof rest;
  return {
    ...(defined as Omit<
      Run,
      | 'extraVars'
      | 'secrets'
      | 'state'
      | 'history'
      | 'attempt'
      | 'version'
      | 'cancelRequested'
      | 'createdAt'
      | 'updatedAt'
    >),
    extraVars: extraVars ?? {},
    secrets: secrets ?? [],
    state: 'queued',
    history: [{ state: 'queued', at }],
    attempt: 0,
    version: 1,
    cancelRequested: false,
    createdAt: at,
    updatedAt: at,
  };
}
