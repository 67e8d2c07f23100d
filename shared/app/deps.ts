import type { Logger } from '@aws-lambda-powertools/logger';
import type { Settings } from '../config/settings.ts';
import type { AssetStore } from '../ports/asset-store.ts';
import type { Clock } from '../ports/clock.ts';
import type { CredentialBroker } from '../ports/credential-broker.ts';
import type { Launchers } from '../ports/launcher.ts';
import type { LogReader } from '../ports/log-store.ts';
import type { RunStore } from '../ports/run-store.ts';
import type { WorkQueue } from '../ports/work-queue.ts';

/** Whether `local` (relay) runs can be served here, and why not. */
export interface RelayAvailability {
  readonly available: boolean;
  readonly reason?: string;
}

/** What the use cases need; each mode's composition root fills it with its adapters. */
export interface AppDeps {
  readonly store: RunStore;
  readonly dispatchQueue: WorkQueue;
  readonly logs: LogReader;
  readonly assets: AssetStore;
  readonly settings: Settings;
  readonly launchers: Launchers;
  readonly relay: RelayAvailability;
  readonly clock: Clock;
  readonly newId: () => string;
  readonly logger: Logger;
  /** Just-in-time checkouts (Password Safe), checked in when a run ends; absent when not configured. */
  readonly credentials?: CredentialBroker;
}

/** The message on the dispatch and relay queues: ids only, never a secret. */
export interface RunMessage {
  readonly runId: string;
}

export const encodeRunMessage = (runId: string): string => JSON.stringify({ runId } satisfies RunMessage);

export function decodeRunMessage(body: string): RunMessage | undefined {
  try {
    const value: unknown = JSON.parse(body);
    if (typeof value === 'object' && value !== null && typeof (value as RunMessage).runId === 'string') {
      return { runId: (value as RunMessage).runId };
    }
  } catch {
    // fall through: a poison message
  }
  return undefined;
}
