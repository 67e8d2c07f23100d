import type { RunKind } from './run-kind.ts';
import type { Target } from './target.ts';

/** The message on the dispatch and relay queues: ids only, never a secret. */
export interface RunMessage {
  readonly runId: string;
}

export const encodeRunMessage = (runId: string): string => JSON.stringify({ runId } satisfies RunMessage);

export function decodeRunMessage(body: string): RunMessage | undefined {
  const value = parsed(body);
  return value === undefined ? undefined : { runId: value.runId };
}

/**
 * What the dispatcher hands the relay beside the run id: the version of the
 * run record the message was sent for (the launch intent), so the relay
 * claims with one conditional write and no read, and the runner plan — the
 * target as dispatch read it, so the relay does not read it again. Ids,
 * names and addresses only, never a secret (secret bindings stay on the run
 * and are resolved by the relay).
 */
export interface RelayMessage extends RunMessage {
  /** The run's version when the message was sent: its launch intent for the `local` backend. */
  readonly version?: number;
  readonly attempt?: number;
  readonly plan?: RelayPlan;
}

export interface RelayPlan {
  readonly kind: RunKind;
  readonly targetId?: string;
  readonly asset: string;
  readonly image: string;
  /** The target as dispatch read it; absent when dispatch did not pass it (the relay then reads it). */
  readonly target?: Target;
}

/**
 * A relay message for a run at the version it was sent for.
 *
 * @example
 * await queue.send(encodeRelayMessage({ runId: run.id, version: run.version, attempt: run.attempt, plan }));
 */
export const encodeRelayMessage = (message: RelayMessage): string => JSON.stringify(message);

/**
 * A relay message in either shape: the current one, or the old `{ runId }`
 * (sent by a dispatcher deployed before this one), which has no version
 * and no plan, so the relay falls back to reading the run and its target.
 * A version or plan of the wrong shape is dropped, not trusted.
 */
export function decodeRelayMessage(body: string): RelayMessage | undefined {
  const value = parsed(body);
  if (value === undefined) return undefined;
  const version = wholeNumber(value.version);
  const attempt = wholeNumber(value.attempt);
  const plan = planOf(value.plan);
  return {
    runId: value.runId,
    ...(version === undefined ? {} : { version }),
    ...(attempt === undefined ? {} : { attempt }),
    ...(plan === undefined ? {} : { plan }),
  };
}

type Loose = Record<string, unknown> & { readonly runId: string };

function parsed(body: string): Loose | undefined {
  try {
    const value: unknown = JSON.parse(body);
    if (typeof value === 'object' && value !== null && typeof (value as RunMessage).runId === 'string') {
      return value as Loose;
    }
  } catch {
    // fall through: a poison message
  }
  return undefined;
}

const wholeNumber = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;

function planOf(v: unknown): RelayPlan | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const p = v as Record<string, unknown>;
  if (typeof p.kind !== 'string' || typeof p.asset !== 'string' || typeof p.image !== 'string')
    return undefined;
  const target = p.target;
  const targetOk =
    typeof target === 'object' && target !== null && (target as { id?: unknown }).id === p.targetId;
  return {
    kind: p.kind as RunKind,
    asset: p.asset,
    image: p.image,
    ...(typeof p.targetId === 'string' ? { targetId: p.targetId } : {}),
    ...(targetOk ? { target: target as Target } : {}),
  };
}
