import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { packagesFor } from './plan.ts';
import type { ConfigFile, Prerequisite } from './sets.ts';

/**
 * The installing half, run only where plan.ts's canInstall says so: apt-get
 * and pip with their own output on the terminal (their progress is the
 * progress), each step announced with what it installs and why.
 *
 * @example
 * await installMissing(missing.map((m) => m.prerequisite), process.stdout);
 */

interface Out {
  write(text: string): unknown;
}

function run(file: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve, reject) => {
    // stdout to our stderr: npm start's own stdout stays the service's log lines.
    const child = spawn(file, args, { env, stdio: ['ignore', process.stderr, 'inherit'] });
    child.once('error', reject);
    child.once('close', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${file} ${args.join(' ')} ended with ${signal ?? code}`)),
    );
  });
}

/** Installs what it can; what still fails shows up when the caller probes again. */
export async function installMissing(missing: readonly Prerequisite[], out: Out): Promise<void> {
  const apt = packagesFor(
    missing.filter((p) => p.packages.apt !== undefined),
    'apt',
  ).packages;
  if (apt.length > 0) {
    out.write(`remote-worker: installing Debian packages: ${apt.join(' ')}\n`);
    for (const p of missing) if (p.packages.apt?.length) out.write(`  ${p.name}: ${p.why}\n`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const started = Date.now();
    try {
      await run('apt-get', ['update', '-q'], env);
      await run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...apt], env);
      out.write(
        `remote-worker: installed ${apt.join(' ')} in ${Math.round((Date.now() - started) / 1000)} s\n`,
      );
    } catch (error) {
      out.write(`remote-worker: ${(error as Error).message}\n`);
    }
  }
  const pip = packagesFor(
    missing.filter((p) => p.packages.pip !== undefined),
    'pip',
  ).packages;
  if (pip.length > 0) {
    out.write(`remote-worker: installing Python packages for the python3 on PATH: ${pip.join(' ')}\n`);
    await run('python3', ['-m', 'pip', 'install', '--quiet', ...pip]).catch((error: Error) => {
      out.write(`remote-worker: ${error.message}\n`);
    });
  }
}

export function writeConfig(config: ConfigFile, out: Out): void {
  out.write(`remote-worker: writing ${config.path}: ${config.why}\n`);
  mkdirSync(dirname(config.path), { recursive: true });
  writeFileSync(config.path, config.content);
}

/** The test images' build script, its progress on stderr (it prints the image names on stdout). */
export function buildImages(script: string, cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(script, [], { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${script} ended with ${code}`)),
    );
  });
}
