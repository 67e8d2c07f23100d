import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const repo = resolve(import.meta.dirname, '../..');
const shimSource = join(repo, 'runners/shim/main.ts');

/**
 * The task shim as a real process (runners/shim/main.ts through tsx, or a bundle of it) with
 * exactly `env` plus `RW_RESULT_DIR` (a new directory under `scratch`):
 * answers its exit code, its combined output and its exit.json.
 *
 * @example
 * const run = await shimProcess({ PATH, HOME: scratch, RW_TASK: JSON.stringify(spec), RW_TMP_DIR: scratch }, scratch);
 */
export async function shimProcess(
  env: Record<string, string>,
  scratch: string,
  /** A bundled shim (what the runner images run) instead of the source through tsx. */
  bundle?: string,
): Promise<{ code: number | null; out: string; exitRecord: unknown }> {
  const resultDir = mkdtempSync(join(scratch, 'result-'));
  const args = bundle === undefined ? ['--import', 'tsx', shimSource] : [bundle];
  const child = spawn(process.execPath, args, {
    cwd: repo,
    env: { ...env, RW_RESULT_DIR: resultDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((done) => child.once('close', (c) => done(c)));
  return { code, out, exitRecord: JSON.parse(readFileSync(join(resultDir, 'exit.json'), 'utf8')) };
}
