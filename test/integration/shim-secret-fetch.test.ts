import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import { DEFAULT_MASK } from '../../shared/domain/redaction.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { useMoto } from '../support/moto.ts';
import { shimProcess } from '../support/shim-process.ts';

/**
 * The task shim fetching a run's own secrets itself (RW_SECRET_REFS) from moto
 * Secrets Manager, as an ECS task does with its task role: the real shim
 * process (tsx), the real SDK with the default credential chain (moto's
 * credentials and endpoint in the environment), and a real ansible-playbook
 * that asserts the value arrived intact and prints it — masked.
 */
const moto = useMoto();
const repo = resolve(import.meta.dirname, '../..');
const playbook = join(repo, 'test/fixtures/playbooks/print-secret.yml');
const SECRET = 'per-run-pw-canary-5e1d';
const NAME = 'remote-worker/test/runs/run-fetch/db_password';

/** The esbuild arguments of package.json's build:shim, but its --outfile. */
const SHIM_BUILD_ARGS =
  (
    JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  ).scripts['build:shim']
    ?.split(' ')
    .slice(1)
    .filter((a) => !a.startsWith('--outfile=')) ?? [];

let scratch: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-secret-fetch-'));
  const client = new SecretsManagerClient(moto().clientConfig());
  await client.send(new CreateSecretCommand({ Name: NAME, SecretString: SECRET }));
  client.destroy();
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const spec: TaskSpec = {
  runId: 'run-fetch',
  kind: 'cluster_play',
  asset: { kind: 'file', path: playbook },
  assetType: 'playbook',
  inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
  extraVars: { expected_sha1: createHash('sha1').update(SECRET).digest('hex') },
  secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
  timeoutSeconds: 120,
};

const shim = (refs: string, bundle?: string) =>
  shimProcess(
    {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: scratch,
      ...moto().env(),
      RW_TASK: JSON.stringify(spec),
      RW_SECRET_REFS: refs,
      RW_TMP_DIR: scratch,
    },
    scratch,
    bundle,
  );

describe('the task shim fetching per-run secrets (moto Secrets Manager)', () => {
  it('reads each referenced secret into the variable the launcher named, and redacts it', async () => {
    const run = await shim(JSON.stringify({ RW_SECRET_0: NAME }));

    // The playbook's assert compares a hash of the value: exit 0 means it arrived intact.
    expect(run.out).toContain('ansible-playbook exited with code 0');
    expect(run.code).toBe(0);
    expect(run.out).not.toContain(SECRET);
    expect(run.out).toContain(`the password is ${DEFAULT_MASK}`);
  });

  it('does the same from the bundle the runner images run (npm run build:shim: the SDK is bundled in)', async () => {
    const bundle = join(scratch, 'shim.mjs');
    const built = spawnSync(
      join(repo, 'node_modules/.bin/esbuild'),
      [...SHIM_BUILD_ARGS, `--outfile=${bundle}`],
      {
        cwd: repo,
        encoding: 'utf8',
      },
    );
    expect(built.status, built.stderr).toBe(0);

    const run = await shim(JSON.stringify({ RW_SECRET_0: NAME }), bundle);

    expect(run.out).toContain('ansible-playbook exited with code 0');
    expect(run.code).toBe(0);
    expect(run.out).not.toContain(SECRET);
  });

  it('stops before the tool (exit 125) when a secret cannot be read, naming the reference and not a value', async () => {
    const run = await shim(JSON.stringify({ RW_SECRET_0: 'remote-worker/test/runs/run-fetch/gone' }));

    expect(run.code).toBe(125);
    expect(run.out).toContain(
      'could not read secret remote-worker/test/runs/run-fetch/gone for RW_SECRET_0: ResourceNotFoundException',
    );
    expect(run.out).not.toContain('ansible-playbook exited');
    expect(run.exitRecord).toMatchObject({ exitCode: 125 });
  });

  it('refuses references that are not a map of variable names (exit 125)', async () => {
    for (const refs of ['not json', '["RW_SECRET_0"]', '{"not a name": "x"}', '{"RW_SECRET_0": ""}']) {
      const run = await shim(refs);
      expect(run.code).toBe(125);
      expect(run.out).toContain('RW_SECRET_REFS');
    }
  });
});
