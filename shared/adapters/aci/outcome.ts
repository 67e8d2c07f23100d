import { exitCodeMeaning } from '../../domain/exit-codes.ts';
import type { BackendStatus } from '../../ports/launcher.ts';

/** The likely cause of a SIGKILL on this backend. */
const SIGKILL = 'killed by SIGKILL, often out of memory or a stop';

/**
 * Turns what ARM says about a container group into a BackendStatus. Pure,
 * and typed on the few fields it reads (structurally what the SDK's
 * `ContainerGroup` holds), so a poller or a reconciler can feed it too.
 *
 * - group `provisioningState: Failed`: the deployment failed before the
 *   container could run (an image that cannot be pulled, a subnet that cannot
 *   be joined) → exited, with the container's warning event as the reason and
 *   no exit code unless the container did run;
 * - container `currentState.state: Terminated` → exited with its `exitCode`;
 *   a reason unless it is a clean 0;
 * - group `instanceView.state: Stopped` (someone stopped it) → exited;
 * - container `Running` → running; anything else (`Waiting`, no instance view
 *   yet while the group is `Pending`/`Creating`) → pending.
 *
 * @example
 * describeContainerGroup({ provisioningState: 'Succeeded', containers: [{ name: 'runner',
 *   instanceView: { currentState: { state: 'Terminated', exitCode: 2, detailStatus: 'Error' } } }] }, 'runner')
 * // { state: 'exited', exitCode: 2, reason: 'the runner container exited with code 2' }
 */
export interface AciEventFacts {
  readonly type?: string;
  readonly name?: string;
  readonly message?: string;
}

export interface AciContainerFacts {
  readonly name: string;
  readonly instanceView?: {
    readonly currentState?: {
      readonly state?: string;
      readonly exitCode?: number;
      readonly detailStatus?: string;
    };
    readonly events?: readonly AciEventFacts[];
  };
}

export interface AciGroupFacts {
  readonly provisioningState?: string;
  readonly containers?: readonly AciContainerFacts[];
  readonly instanceView?: { readonly state?: string; readonly events?: readonly AciEventFacts[] };
}

const MAX_REASON = 500;

const clip = (text: string): string =>
  text.length <= MAX_REASON ? text : `${text.slice(0, MAX_REASON - 1)}…`;

/** ACI's `detailStatus` words that say nothing the exit code does not. */
const GENERIC_DETAIL = new Set(['', 'completed', 'error', 'terminated']);

const same = (a: string | undefined, b: string): boolean => a?.toLowerCase() === b.toLowerCase();

/** The most recent warning ACI recorded, for the container first, then for the group. */
function lastWarning(container: AciContainerFacts | undefined, group: AciGroupFacts): string | undefined {
  for (const events of [container?.instanceView?.events, group.instanceView?.events]) {
    const warning = [...(events ?? [])]
      .reverse()
      .find((e) => same(e.type, 'Warning') && (e.message ?? '').trim() !== '');
    if (warning?.message !== undefined) return warning.message.trim();
  }
  return undefined;
}

function terminated(exitCode: number | undefined, detailStatus: string | undefined): BackendStatus {
  const detail = detailStatus?.trim() ?? '';
  const extra = GENERIC_DETAIL.has(detail.toLowerCase()) ? '' : ` (${detail})`;
  if (exitCode === undefined) {
    return {
      state: 'exited',
      reason: clip(`the runner container terminated without an exit code${extra}`),
    };
  }
  if (exitCode === 0) return { state: 'exited', exitCode };
  const meaning = exitCodeMeaning(exitCode, SIGKILL);
  return {
    state: 'exited',
    exitCode,
    reason: clip(
      `the runner container exited with code ${exitCode}${meaning === undefined ? '' : ` (${meaning})`}${extra}`,
    ),
  };
}

export function describeContainerGroup(group: AciGroupFacts, containerName: string): BackendStatus {
  const container = group.containers?.find((c) => c.name === containerName);
  const current = container?.instanceView?.currentState;

  if (same(current?.state, 'Terminated')) return terminated(current?.exitCode, current?.detailStatus);

  if (same(group.provisioningState, 'Failed')) {
    const why = lastWarning(container, group) ?? current?.detailStatus?.trim();
    return {
      state: 'exited',
      reason: clip(
        `ACI could not deploy the container group${why === undefined || why === '' ? '' : `: ${why}`}`,
      ),
    };
  }
  if (same(group.provisioningState, 'Canceled')) {
    return { state: 'exited', reason: 'the ACI deployment of the container group was canceled' };
  }
  if (same(group.instanceView?.state, 'Stopped')) {
    return { state: 'exited', reason: 'the container group was stopped before its container finished' };
  }
  if (same(current?.state, 'Running')) return { state: 'running' };
  return { state: 'pending' };
}
