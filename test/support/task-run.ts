import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';

/**
 * Run a task spec the way a runner container would — the bundled task shim
 * with RW_TASK in its environment and nothing else of ours — so a test can
 * prove a task really reads what its launcher handed it (a presigned URL, a
 * SAS, a signed URL). The inventory is pointed at localhost: what is under
 * test is how the task gets its asset, not how it reaches its host.
 */

const REPO = resolve(import.meta.dirname, '../..');
let bundle: Promise<string> | undefined;

/** The shim bundled once per test process, with the images' esbuild options. */
function shimBundle(): Promise<string> {
  bundle ??= (async () => {
    const outfile = join(mkdtempSync(join(tmpdir(), 'rw-task-run-')), 'shim.mjs');
    await build({
      entryPoints: [join(REPO, 'runners/shim/main.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      outfile,
      logLevel: 'silent',
      absWorkingDir: REPO,
    });
    return outfile;
  })();
  return bundle;
}

export interface TaskRunResult {
  readonly code: number | null;
  readonly output: string;
}

export async function runTaskOnLocalhost(
  spec: TaskSpec,
  env: Readonly<Record<string, string>> = {},
): Promise<TaskRunResult> {
  const shim = await shimBundle();
  const localSpec: TaskSpec = {
    ...spec,
    inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
    secretVars: [],
  };
  const { sshKeyEnv: _key, secretEnvNames: _names, ...withoutSecrets } = localSpec;
  const child = spawn(process.execPath, [shim], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      RW_TASK: JSON.stringify(withoutSecrets),
      RW_TMP_DIR: mkdtempSync(join(tmpdir(), 'rw-task-tmp-')),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
  });
  const code = await new Promise<number | null>((done) => child.once('close', (c) => done(c)));
  return { code, output };
}
