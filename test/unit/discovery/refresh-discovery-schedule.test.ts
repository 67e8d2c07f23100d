import { describe, expect, it } from 'vitest';
import { makeRefreshSchedule } from '../../../functions/discovery/refresh-discovery-schedule.ts';
import { DiscoveryCache } from '../../../shared/app/discovery.ts';
import { type DiscoveryStore, MemoryDiscoveryStore } from '../../../shared/ports/discovery-store.ts';
import type { Logger } from '../../../shared/ports/logger.ts';
import { ManualClock } from '../app/harness.ts';

/** A logger that keeps what it was told. */
function recordingLogger(): Logger & { readonly lines: [string, string, unknown[]][] } {
  const lines: [string, string, unknown[]][] = [];
  const at =
    (level: string) =>
    (message: string, ...fields: unknown[]) => {
      lines.push([level, message, fields]);
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as never;
}

/** A running EC2 VM, as the EC2 adapter maps one. */
const web = {
  privateAddress: '10.0.0.1',
  state: 'running',
  os: 'linux',
  cloud: 'aws',
  id: 'aws-i-1',
  cloudId: 'i-1',
  name: 'web',
} as const;

describe('makeRefreshSchedule', () => {
  it('refreshes every cloud and answers counts and errors, never the rows', async () => {
    const logger = recordingLogger();
    const discovery = new DiscoveryCache(
      [
        { cloud: 'aws', discover: async () => [web] },
        { cloud: 'gcp', discover: async () => Promise.reject(new Error('GCE aggregatedList failed: 403')) },
      ],
      new ManualClock(),
      logger,
    );

    const outcome = await makeRefreshSchedule({ discovery, logger })();

    expect(outcome).toEqual({
      clouds: {
        aws: { count: 1, refreshedAt: '2025-01-01T00:00:00.000Z' },
        gcp: { count: 0, error: 'GCE aggregatedList failed: 403' },
      },
    });
    expect(JSON.stringify(logger.lines)).not.toContain('10.0.0.1');
    expect((await discovery.snapshot()).vms.map((v) => v.id)).toEqual(['aws-i-1']);
  });

  it('does nothing, and says so, where discovery_clouds names no usable cloud', async () => {
    const logger = recordingLogger();

    const outcome = await makeRefreshSchedule({ logger })();

    expect(outcome).toEqual({ clouds: {} });
    expect(logger.lines.map(([level]) => level)).toEqual(['warn']);
  });

  it('fails when the cache cannot be written, so EventBridge tries again', async () => {
    const store: DiscoveryStore = new MemoryDiscoveryStore();
    const unwritable = new Error('AccessDeniedException: dynamodb:PutItem');
    store.saveListing = () => Promise.reject(unwritable);
    store.saveFailure = () => Promise.reject(unwritable);
    const discovery = new DiscoveryCache(
      [{ cloud: 'aws', discover: async () => [web] }],
      new ManualClock(),
      undefined,
      { store },
    );

    await expect(makeRefreshSchedule({ discovery, logger: recordingLogger() })()).rejects.toBe(unwritable);
  });
});
