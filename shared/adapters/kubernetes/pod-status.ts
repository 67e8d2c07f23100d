import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { exitCodeMeaning } from '../../domain/exit-codes.ts';
import type { BackendStatus } from '../../ports/launcher.ts';
import { CONTAINER_NAME } from './manifests.ts';

/**
 * What a pod's status means for its run. Pure.
 *
 * - `Pending` → pending, `Running` (and `Unknown`: the node stopped
 *   reporting; the run's own deadline decides) → running; a pod being
 *   deleted (cancel) stays running until its container has ended.
 * - `Succeeded` / `Failed` → exited, with the runner container's
 *   `state.terminated.exitCode` and a reason from `terminated.reason`
 *   (`OOMKilled`, `Error`, `ContainerCannotRun` …) or the pod's own `reason`
 *   (`DeadlineExceeded`: `activeDeadlineSeconds` passed; `Evicted`).
 * - A container that cannot start. `InvalidImageName` and
 *   `ErrImageNeverPull` are final at once: no retry can fix them.
 *   `ErrImagePull`, `ImagePullBackOff`, `CreateContainerConfigError`,
 *   `CreateContainerError`, `RunContainerError` and hook errors may clear (a
 *   registry hiccup, a Secret created a moment after the pod), so they end the
 *   run only when the pod is still waiting with one of them `stuckAfterSeconds`
 *   after it started (default 120 s: the kubelet's image pull back-off has
 *   tried four times by then). The pod is then reported exited without an
 *   exit code, and cleanup removes it.
 * - An unschedulable pod stays pending: capacity or a quota may free up, and
 *   the run's timeout bounds the wait.
 *
 * A container's `terminated.message` (its termination-log file) is not
 * quoted for a container that ran: the tool could have written a secret there,
 * unredacted. It is quoted only for runtime failures before the tool started.
 *
 * @example
 * describePod(pod, { container: 'runner', nowMs: Date.now(), stuckAfterSeconds: 120 })
 * // { state: 'exited', exitCode: 137, reason: 'out of memory (OOMKilled): the runner container exited with code 137 …' }
 */
export interface DescribePodOptions {
  readonly container: string;
  readonly nowMs: number;
  readonly stuckAfterSeconds: number;
}

const MAX_REASON = 500;
const MAX_QUOTE = 300;

/** Waiting reasons that no amount of waiting fixes. */
const FATAL_AT_ONCE: Readonly<Record<string, string>> = {
  InvalidImageName: 'the image name is not valid',
  ErrImageNeverPull: 'the image is not on the node and imagePullPolicy is Never',
};

/** Waiting reasons that fail the run once they persist. */
const FATAL_IF_STUCK: Readonly<Record<string, string>> = {
  ErrImagePull: 'the image could not be pulled',
  ImagePullBackOff: 'the image could not be pulled',
  CreateContainerConfigError: "the container's configuration (its Secret or ConfigMap) could not be used",
  CreateContainerError: 'the container could not be created',
  RunContainerError: 'the container could not be started',
  PreCreateHookError: 'a pre-create hook failed',
  PreStartHookError: 'a pre-start hook failed',
};

/** Terminated reasons of a container the runtime could not start: their message is the runtime's, not the tool's. */
const RUNTIME_FAILURES: Readonly<Record<string, string>> = {
  ContainerCannotRun: 'the container could not run',
  StartError: 'the container could not start',
};

const clip = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max - 1)}…`;

const quote = (message: string | undefined): string => {
  const trimmed = message?.trim() ?? '';
  return trimmed === '' ? '' : `: ${clip(trimmed, MAX_QUOTE)}`;
};

function exited(exitCode: number | undefined, reason: string | undefined): BackendStatus {
  return {
    state: 'exited',
    ...(exitCode === undefined ? {} : { exitCode }),
    ...(reason === undefined ? {} : { reason: clip(reason, MAX_REASON) }),
  };
}

function startedMs(pod: V1Pod): number | undefined {
  const at = pod.status?.startTime ?? pod.metadata?.creationTimestamp;
  if (at === undefined) return undefined;
  const ms = at instanceof Date ? at.getTime() : Date.parse(String(at));
  return Number.isNaN(ms) ? undefined : ms;
}

function terminatedOutcome(pod: V1Pod, container: V1ContainerStatus | undefined): BackendStatus {
  const terminated = container?.state?.terminated;
  const exitCode = terminated?.exitCode;
  const podReason = pod.status?.reason;
  const codeText =
    exitCode === undefined
      ? undefined
      : `the runner container exited with code ${exitCode}${
          exitCodeMeaning(exitCode) === undefined ? '' : ` (${exitCodeMeaning(exitCode)})`
        }`;

  if (podReason === 'DeadlineExceeded') {
    const base = 'the pod ran past its deadline (activeDeadlineSeconds) and was stopped (DeadlineExceeded)';
    return exited(exitCode, codeText === undefined ? base : `${base}; ${codeText}`);
  }
  if (podReason === 'Evicted') {
    const base = `the pod was evicted from its node${quote(pod.status?.message)}`;
    return exited(exitCode, codeText === undefined ? base : `${base}; ${codeText}`);
  }
  const reason = terminated?.reason;
  if (reason === 'OOMKilled') {
    return exited(exitCode, `out of memory (OOMKilled)${codeText === undefined ? '' : `: ${codeText}`}`);
  }
  if (reason !== undefined && RUNTIME_FAILURES[reason] !== undefined) {
    return exited(exitCode, `${RUNTIME_FAILURES[reason]} (${reason})${quote(terminated?.message)}`);
  }
  if (exitCode === 0 && pod.status?.phase === 'Succeeded') return exited(0, undefined);
  if (codeText !== undefined) return exited(exitCode, codeText);
  const fallback = podReason === undefined ? '' : ` (${podReason})${quote(pod.status?.message)}`;
  return exited(
    undefined,
    `the pod ${pod.status?.phase === 'Succeeded' ? 'succeeded' : 'failed'} without an exit code${fallback}`,
  );
}

export function describePod(pod: V1Pod, options: DescribePodOptions): BackendStatus {
  const container = pod.status?.containerStatuses?.find((c) => c.name === options.container);
  switch (pod.status?.phase) {
    case 'Succeeded':
    case 'Failed':
      return terminatedOutcome(pod, container);
    case 'Running':
    case 'Unknown':
      return { state: 'running' };
    default: {
      const waiting = container?.state?.waiting;
      const reason = waiting?.reason;
      if (reason !== undefined && FATAL_AT_ONCE[reason] !== undefined) {
        return exited(undefined, `${FATAL_AT_ONCE[reason]} (${reason})${quote(waiting?.message)}`);
      }
      if (reason !== undefined && FATAL_IF_STUCK[reason] !== undefined) {
        const since = startedMs(pod);
        const stuckSeconds = since === undefined ? 0 : (options.nowMs - since) / 1000;
        if (stuckSeconds >= options.stuckAfterSeconds) {
          return exited(
            undefined,
            `${FATAL_IF_STUCK[reason]} (${reason}, still failing ${Math.floor(stuckSeconds)} s after the pod started)${quote(waiting?.message)}`,
          );
        }
      }
      return { state: 'pending' };
    }
  }
}

/** The pod has ended: its container will write no more. */
export const hasEnded = (pod: V1Pod): boolean =>
  pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/** The container has run or is running: its Secret and ConfigMap were there. */
export function hasStarted(pod: V1Pod): boolean {
  if (hasEnded(pod)) return true;
  const state = pod.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME)?.state;
  return state?.running !== undefined || state?.terminated !== undefined;
}
