import { describe, expect, it } from 'vitest';
import { loadRelayConfig } from '../../../runners/relay/config.ts';
import { SettingsInvalidError } from '../../../shared/domain/errors.ts';

const REQUIRED = {
  RELAY_ID: 'dc1-relay',
  RELAY_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/remote-worker-relay',
  RUNS_TABLE: 'remote-worker-runs',
  RELAY_ASSET_ROOT: '/srv/playbooks',
} as const;

describe('loadRelayConfig', () => {
  it('applies the defaults', () => {
    expect(loadRelayConfig(REQUIRED, '/opt/relay')).toEqual({
      relayId: 'dc1-relay',
      queueUrl: REQUIRED.RELAY_QUEUE_URL,
      runsTable: 'remote-worker-runs',
      logsTable: 'remote-worker-runs',
      assetRoot: '/srv/playbooks',
      concurrency: 3,
      executor: 'auto',
      workDir: '/opt/relay/.remote-worker-relay',
      drainSeconds: 30,
      pollWaitSeconds: 20,
      logLevel: 'INFO',
    });
  });

  it('reads every optional variable, treating an empty one as unset', () => {
    const config = loadRelayConfig(
      {
        ...REQUIRED,
        LOGS_TABLE: 'remote-worker-logs',
        RELAY_CONCURRENCY: '8',
        RELAY_EXECUTOR: 'process',
        RELAY_WORK_DIR: 'work',
        RELAY_DRAIN_SECONDS: '0',
        RELAY_POLL_WAIT_SECONDS: '',
        RELAY_SECRET_PREFIX: 'relay/',
        RELAY_SHIM_PATH: 'dist/shim.mjs',
        LOG_LEVEL: 'DEBUG',
      },
      '/opt/relay',
    );

    expect(config).toMatchObject({
      logsTable: 'remote-worker-logs',
      concurrency: 8,
      executor: 'process',
      workDir: '/opt/relay/work',
      drainSeconds: 0,
      pollWaitSeconds: 20,
      secretPrefix: 'relay/',
      shimPath: '/opt/relay/dist/shim.mjs',
      logLevel: 'DEBUG',
    });
  });

  it('reports every problem in one error, each naming its variable', () => {
    let error: unknown;
    try {
      loadRelayConfig({
        RELAY_ID: 'no spaces please',
        RELAY_QUEUE_URL: 'not a url',
        RELAY_CONCURRENCY: '0',
        RELAY_EXECUTOR: 'kubernetes',
        RELAY_POLL_WAIT_SECONDS: '30',
        RELAY_DRAIN_SECONDS: 'soon',
      });
    } catch (e) {
      error = e;
    }

    expect(error).toBeInstanceOf(SettingsInvalidError);
    const problems = (error as SettingsInvalidError).problems;
    expect(problems.map((p) => p.path).sort()).toEqual([
      'RELAY_ASSET_ROOT',
      'RELAY_CONCURRENCY',
      'RELAY_DRAIN_SECONDS',
      'RELAY_EXECUTOR',
      'RELAY_ID',
      'RELAY_POLL_WAIT_SECONDS',
      'RELAY_QUEUE_URL',
      'RUNS_TABLE',
    ]);
    expect(problems).toContainEqual({ path: 'RUNS_TABLE', message: 'is required' });
    expect(problems).toContainEqual({ path: 'RELAY_CONCURRENCY', message: 'must be at least 1' });
    expect(problems).toContainEqual({ path: 'RELAY_DRAIN_SECONDS', message: 'must be a whole number' });
    expect((error as Error).message).toMatch(/^Invalid settings: /);
  });
});
