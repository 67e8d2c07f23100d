import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startLocalMode } from '../../bin/local-mode/local-mode.ts';
import { readAwsEnvironment } from '../../shared/composition/aws.ts';
import { SettingsInvalidError } from '../../shared/domain/errors.ts';
import { REPO } from '../e2e/harness.ts';

const idleExecutor = {
  name: 'process' as const,
  start: () => new Promise<never>(() => {}),
  adopt: () => new Promise<never>(() => {}),
  reapOrphans: async () => [],
};

/** What a deployed stack sets; the values only have to be well formed. */
const AWS_ENV = {
  RUNS_TABLE: 'runs',
  DISPATCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dispatch',
  ASSET_BUCKET: 'assets-bucket',
  LOG_GROUP: '/remote-worker/runs',
};

const missingKubeconfig = join(tmpdir(), 'rw-no-such-dir', 'kubeconfig.yaml');

/** Bad values the adapters used to find only when they were built or first used. */
const BAD: [string, Record<string, string>, string][] = [
  ['a namespace that is no DNS label', { KUBERNETES_NAMESPACE: 'Remote_Worker' }, 'kubernetes_namespace'],
  ['a kubeconfig that does not exist', { KUBERNETES_KUBECONFIG: missingKubeconfig }, 'kubernetes_kubeconfig'],
  [
    'Password Safe without its API key secret',
    { PASSWORD_SAFE_URL: 'https://ps.example', PASSWORD_SAFE_RUNAS: 'svc' },
    'password_safe_api_key_secret',
  ],
];

const startError = async (env: Record<string, string>): Promise<unknown> => {
  const dataDir = join(mkdtempSync(join(tmpdir(), 'rw-settings-start-')), 'data');
  try {
    const local = await startLocalMode({
      cwd: REPO,
      env: {
        PORT: '0',
        REMOTE_WORKER_DATA_DIR: dataDir,
        REMOTE_WORKER_TOKEN: 'secret-token-for-tests',
        LOG_LEVEL: 'SILENT',
        PATH: process.env.PATH,
        ...env,
      },
      executor: idleExecutor,
    });
    await local.close({ drainMs: 0 });
    return undefined;
  } catch (error) {
    // Refused before anything was made: no data directory, no token.
    expect(existsSync(dataDir)).toBe(false);
    return error;
  }
};

describe('start-up refuses an invalid setting, naming its key, in both modes', () => {
  it.each(BAD)('local mode, with the kubernetes runner selected: %s', async (_what, env, key) => {
    const error = await startError({ K8S_RUNNER: 'kubernetes', ...env });

    expect(error).toBeInstanceOf(SettingsInvalidError);
    expect((error as SettingsInvalidError).problems.map((p) => p.path)).toEqual([key]);
  });

  it.each(BAD)('AWS mode (every cold start): %s', (_what, env, key) => {
    let error: unknown;
    try {
      readAwsEnvironment({ ...AWS_ENV, K8S_RUNNER: 'kubernetes', ...env });
    } catch (e) {
      error = e;
    }

    expect(error).toBeInstanceOf(SettingsInvalidError);
    expect((error as SettingsInvalidError).problems.map((p) => p.path)).toEqual([key]);
  });

  it('still starts local mode when the kubernetes runner is merely not configured (refused per run)', async () => {
    expect(await startError({ K8S_RUNNER: 'kubernetes' })).toBeUndefined();
  });
});
