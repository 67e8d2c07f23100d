import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildImages, installMissing, writeConfig } from './prerequisites/install.ts';
import { canInstall, detectFamily, type Host, stopMessage } from './prerequisites/plan.ts';
import { configState, onPath, type ProbeResult, probe } from './prerequisites/probe.ts';
import { START, TEST, TEST_CONFIG, TEST_IMAGES } from './prerequisites/sets.ts';

/**
 * The system packages `npm start` and `npm test` need, before they start
 * (package.json's prestart and pretest):
 *
 *   node --import tsx bin/prerequisites.ts start           # local runs: Ansible
 *   node --import tsx bin/prerequisites.ts test            # the suite: START and TEST, podman's config, images
 *   node --import tsx bin/prerequisites.ts test --check    # report only; exit 1 when something is missing
 *   node --import tsx bin/prerequisites.ts test --json     # the sets and what is missing, as JSON (no install)
 *
 * All present: silent and quick (PATH look-ups, one Python per interpreter).
 * Missing, as root on Debian with apt-get: installs it, saying what and why.
 * Elsewhere: stops with the command per distribution family.
 * REMOTE_WORKER_PREREQUISITES=check never installs; =skip checks nothing.
 * For `start`, LOCAL_EXECUTOR=docker (setting local_executor) needs no Ansible here.
 */

const REPO = resolve(import.meta.dirname, '..');

function host(): Host {
  let osRelease: string | undefined;
  try {
    osRelease = readFileSync('/etc/os-release', 'utf8');
  } catch {
    osRelease = undefined;
  }
  return {
    family: detectFamily(osRelease, process.platform),
    root: process.getuid?.() === 0,
    aptGet: onPath('apt-get') !== undefined,
  };
}

/**
 * local_executor from the settings file and env, read only when something is
 * missing (zod and the settings stay off the quick path). A bad settings
 * file is bin/local.ts's to report, right after.
 */
async function localExecutor(): Promise<string> {
  const { loadSettings } = await import('../shared/config/settings.ts');
  try {
    return loadSettings().local_executor;
  } catch {
    return 'auto';
  }
}

const missingOf = (results: readonly ProbeResult[]) => results.filter((r) => r.missing.length > 0);

async function main(argv: readonly string[]): Promise<number> {
  const [what, ...flags] = argv;
  if (what !== 'start' && what !== 'test') {
    process.stderr.write('usage: bin/prerequisites.ts start|test [--check] [--json]\n');
    return 2;
  }
  const sets = what === 'start' ? START : [...START, ...TEST];
  const configs = what === 'start' ? [] : TEST_CONFIG;
  const command = what === 'start' ? 'npm start' : 'npm test';

  if (flags.includes('--json')) {
    const results = await probe(sets);
    const json = {
      sets: { start: START, test: TEST },
      config: TEST_CONFIG.map(({ path, why }) => ({ path, why })),
      images: TEST_IMAGES,
      missing: missingOf(results).map((r) => ({ name: r.prerequisite.name, missing: r.missing })),
    };
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
    return json.missing.length === 0 ? 0 : 1;
  }

  const setting = process.env.REMOTE_WORKER_PREREQUISITES || 'install';
  if (!['install', 'check', 'skip'].includes(setting)) {
    process.stderr.write(
      `remote-worker: REMOTE_WORKER_PREREQUISITES must be install, check or skip, not ${setting}\n`,
    );
    return 2;
  }
  if (setting === 'skip') return 0;
  const checkOnly = setting === 'check' || flags.includes('--check');

  let missing = missingOf(await probe(sets));
  if (missing.length > 0 && what === 'start' && (await localExecutor()) === 'docker') return 0;
  let absentConfigs = configs.filter((c) => configState(c) === 'absent');
  for (const config of configs.filter((c) => configState(c) === 'different')) {
    process.stderr.write(
      `remote-worker: keeping ${config.path}, which lacks what the container tests need on hosts like CI's ` +
        `(${config.why}):\n${config.content}`,
    );
  }
  const machine = host();
  if ((missing.length > 0 || absentConfigs.length > 0) && !checkOnly && canInstall(machine)) {
    await installMissing(
      missing.map((m) => m.prerequisite),
      process.stderr,
    );
    for (const config of absentConfigs) writeConfig(config, process.stderr);
    missing = missingOf(await probe(sets));
    absentConfigs = configs.filter((c) => configState(c) === 'absent');
  }
  if (missing.length > 0 || absentConfigs.length > 0) {
    process.stderr.write(stopMessage(command, missing, machine, absentConfigs));
    return 1;
  }
  if (what === 'test' && !checkOnly) {
    const started = Date.now();
    await buildImages(TEST_IMAGES, REPO);
    const seconds = Math.round((Date.now() - started) / 1000);
    if (seconds > 2) process.stderr.write(`remote-worker: test images ready in ${seconds} s\n`);
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`remote-worker: ${(error as Error).message}\n`);
    process.exitCode = 1;
  },
);
