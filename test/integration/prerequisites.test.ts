import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { onPath } from '../../bin/prerequisites/probe.ts';
import type { Prerequisite } from '../../bin/prerequisites/sets.ts';
import { type Scan, scanSources, scanTree } from '../support/spawned-tools.ts';

/**
 * bin/prerequisites.ts is the one list of system packages: this holds the
 * code to it. The programs and Python modules that test/, tools/, runners/
 * and shared/ start (test/support/spawned-tools.ts, a static scan) plus
 * knip.json's ignoreBinaries must each be in one of its two sets, as the
 * script itself reports them in check-only mode (`--json`); and each entry
 * must be used, so the list does not grow what nobody needs.
 */

const REPO = resolve(import.meta.dirname, '../..');
const SCRIPT = join(REPO, 'bin/prerequisites.ts');
const SCANNED = ['test', 'tools', 'runners', 'shared'];

/** Started by the code but not a system package of ours; each with why. */
const EXEMPT_COMMANDS: Readonly<Record<string, string>> = {
  docker:
    "the docker executor's default CLI (local_docker_cli); the suite drives that executor through podman, and production installs Docker, not npm",
};

interface Listing {
  readonly sets: { readonly start: readonly Prerequisite[]; readonly test: readonly Prerequisite[] };
  readonly missing: readonly { name: string; missing: string[] }[];
}

function checkOnly(env: NodeJS.ProcessEnv = process.env) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, 'test', '--json'], {
    cwd: REPO,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stderr: run.stderr, listing: JSON.parse(run.stdout) as Listing };
}

const declaredCommands = (sets: Listing['sets']) =>
  new Set([...sets.start, ...sets.test].flatMap((p) => [...(p.commands ?? []), ...(p.alsoProvides ?? [])]));
const declaredModules = (sets: Listing['sets']) =>
  new Set([...sets.start, ...sets.test].flatMap((p) => p.python?.modules ?? []));

/** The standard library of the python3 the suite runs, which needs no package. */
const stdlib = (): Set<string> =>
  new Set(
    spawnSync('python3', ['-c', "import sys; print('\\n'.join(sys.stdlib_module_names))"], {
      encoding: 'utf8',
    })
      .stdout.split('\n')
      .filter(Boolean),
  );

describe('bin/prerequisites.ts in check-only mode', () => {
  let listing: Listing;
  let scan: Scan;
  let status: number | null;

  beforeAll(() => {
    ({ listing, status } = checkOnly());
    scan = scanTree(REPO, SCANNED);
    const knip = JSON.parse(readFileSync(join(REPO, 'knip.json'), 'utf8')) as { ignoreBinaries?: string[] };
    for (const name of knip.ignoreBinaries ?? []) {
      scan.commands.set(name, [...(scan.commands.get(name) ?? []), 'knip.json ignoreBinaries']);
    }
  }, 60_000);

  it('finds every prerequisite of both sets on this machine (npm test installed them first)', () => {
    expect(listing.missing).toEqual([]);
    expect(status).toBe(0);
  });

  it('lists every program the suite starts in one of its two sets', () => {
    const declared = declaredCommands(listing.sets);
    // npm packages (node_modules/.bin) come with npm install; repo scripts are scanned as shell scripts.
    const fromNpm = (name: string) => existsSync(join(REPO, 'node_modules/.bin', name));
    const unlisted = [...scan.commands]
      .filter(([name]) => !declared.has(name) && !(name in EXEMPT_COMMANDS) && !fromNpm(name))
      .filter(([name]) => !name.endsWith('.sh'))
      .map(([name, where]) => `${name} (${where.join(', ')})`);

    expect(unlisted).toEqual([]);
    // The scan is not empty-handed: it sees the programs the suite is known to drive.
    expect([...scan.commands.keys()]).toEqual(
      expect.arrayContaining(['ansible-playbook', 'podman', 'kubectl', 'psql', 'openssl', 'debootstrap']),
    );
  });

  it('lists every Python module outside the standard library that the suite imports', () => {
    const declared = declaredModules(listing.sets);
    const standard = stdlib();
    expect(standard.has('json')).toBe(true);
    const unlisted = [...scan.modules]
      .filter(([name]) => !standard.has(name) && !declared.has(name))
      .map(([name, where]) => `${name} (${where.join(', ')})`);

    expect(unlisted).toEqual([]);
    expect([...scan.modules.keys()]).toEqual(expect.arrayContaining(['moto', 'cfnlint']));
  });

  it('lists nothing the suite does not use', () => {
    const used = (name: string) => scan.commands.has(name) || scan.modules.has(name);
    const unused = [...listing.sets.start, ...listing.sets.test]
      .filter((p) => {
        const names = [...(p.commands ?? []), ...(p.alsoProvides ?? []), ...(p.python?.modules ?? [])];
        if (names.some(used)) return false;
        // Needed by something the suite uses: a program it starts, or a file it runs.
        return !(p.usedBy !== undefined && (used(p.usedBy) || existsSync(join(REPO, p.usedBy))));
      })
      .map((p) => p.name);

    expect(unused).toEqual([]);
  });
});

describe('npm start without Ansible', () => {
  // A new PATH for each test, since one of them installs into it.
  let bin: string;
  beforeEach(() => {
    // node, npm, npx and sh only: everything the start set lists beyond Node.js is missing.
    bin = mkdtempSync(join(tmpdir(), 'rw-prereq-bin-'));
    for (const name of ['node', 'npm', 'npx'])
      symlinkSync(realpathSync(onPath(name) ?? name), join(bin, name));
    symlinkSync('/bin/sh', join(bin, 'sh'));
  });
  afterEach(() => rmSync(bin, { recursive: true, force: true }));

  const npmStart = (env: Record<string, string>) =>
    spawnSync(join(bin, 'npm'), ['start'], {
      cwd: REPO,
      env: { PATH: bin, HOME: bin, PORT: '0', REMOTE_WORKER_DATA_DIR: join(bin, 'data'), ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('stops before the service starts, with the install command for each distribution family', () => {
    // check: never install, so the test cannot change this machine.
    const run = npmStart({ REMOTE_WORKER_PREREQUISITES: 'check' });
    const out = `${run.stdout}${run.stderr}`;

    expect(run.status, out).not.toBe(0);
    expect(out).toContain('ansible-playbook not on PATH');
    expect(out).toContain(
      'Debian/Ubuntu (this machine): apt-get update && apt-get install -y --no-install-recommends ansible openssh-client',
    );
    expect(out).toContain('Fedora/RHEL: sudo dnf install -y ansible openssh-clients');
    expect(out).toContain('Alpine: sudo apk add ansible openssh-client');
    expect(out).toContain('macOS: brew install ansible');
    expect(out).not.toContain('listening on');
  });

  it('installs what is missing with apt-get as root on Debian, saying what and why, then starts', () => {
    // A stand-in apt-get on PATH: it records its arguments and "installs" by linking the real programs in.
    const log = join(bin, 'apt-get.log');
    writeFileSync(
      join(bin, 'apt-get'),
      [
        '#!/bin/sh',
        `echo "$*" >>${log}`,
        '[ "$1" = install ] || exit 0',
        `for p in "$@"; do case $p in`,
        `  ansible) /bin/ln -sf /usr/bin/ansible-playbook /usr/bin/ansible-inventory ${bin}/ ;;`,
        `  openssh-client) /bin/ln -sf /usr/bin/ssh /usr/bin/ssh-keygen ${bin}/ ;;`,
        'esac; done',
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    expect(process.getuid?.(), 'the suite runs as root, as CI does').toBe(0);

    const run = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, 'start'], {
      cwd: REPO,
      env: { PATH: bin, HOME: bin },
      encoding: 'utf8',
      timeout: 60_000,
    });

    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(log, 'utf8').split('\n')).toEqual([
      'update -q',
      'install -y -q --no-install-recommends ansible openssh-client',
      '',
    ]);
    expect(run.stderr).toContain(
      'remote-worker: installing Debian packages: ansible openssh-client\n  ansible: ',
    );
    expect(run.stderr).toMatch(/installed ansible openssh-client in \d+ s/);
  });

  it.each([
    ['REMOTE_WORKER_PREREQUISITES=skip', { REMOTE_WORKER_PREREQUISITES: 'skip' }],
    ['LOCAL_EXECUTOR=docker', { REMOTE_WORKER_PREREQUISITES: 'check', LOCAL_EXECUTOR: 'docker' }],
  ])('lets the operator opt out with %s', (_, env) => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', SCRIPT, 'start'], {
      cwd: REPO,
      env: { PATH: bin, HOME: bin, ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });

    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe('the static scan of spawned programs', () => {
  it('follows constants, helpers, wrappers and Python snippets, so a new tool in a test is seen', () => {
    const { commands, modules } = scanSources([
      {
        path: 'test/support/engine.ts',
        text: "export const ENGINE = process.env.CONTAINER_ENGINE ?? 'skopeo';",
      },
      {
        path: 'test/a.test.ts',
        text: [
          "import { ENGINE } from './support/engine.ts';",
          'const execFileAsync = promisify(execFile);',
          "execFileSync('jq', ['.']);",
          "spawn(ENGINE, ['inspect']);",
          "const run = (tool: string) => execFileAsync('runuser', ['-u', 'x', '--', join('/opt/bin', tool)]);",
          "run('pg_dump');",
          "spawnSync('sh', ['-c', 'LANG=C rsync -a a b && \"$1/gzip\" x | tar -x']);",
          "const SNIPPET = 'import yaml, os\\nfrom requests.adapters import HTTPAdapter';",
          "spawn('python3', ['-c', SNIPPET]);",
          "execFile('python3', ['-m', 'pytest']);",
        ].join('\n'),
      },
    ]);

    expect([...commands.keys()].sort()).toEqual(
      ['gzip', 'jq', 'pg_dump', 'python3', 'rsync', 'runuser', 'sh', 'skopeo', 'tar'].sort(),
    );
    expect([...modules.keys()].sort()).toEqual(['os', 'pytest', 'requests', 'yaml']);
  });
});

describe('.ci/run', () => {
  it("calls the README's quick start commands and nothing else that installs", () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const block = /## Quick start[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const quickStart = block
      .split('\n')
      .flatMap((line) => (line.split('#')[0] ?? '').split('&&'))
      .map((c) => c.trim())
      .filter(Boolean);
    expect(quickStart).toEqual(['npm install', 'npm start', 'npm test']);

    const lines = readFileSync(join(REPO, '.ci/run'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    // Environment assignments and setsid (its own process group) are how it runs a command, not another one.
    const invoked = lines.map((l) => l.replace(/^(?:\w+=\S+\s+|setsid\s+)*/, ''));
    const isQuickStart = (l: string) => quickStart.some((c) => l === c || l.startsWith(`${c} `));
    const INSTALLS =
      /\b(apt-get|apt|dpkg|pip3?|dnf|yum|apk|brew|debootstrap|curl|wget|npx)\b|\bnpm (ci|i|install|add)\b|build-local-images|build-base-image|containers\.conf|prerequisites|-m pip/;

    expect(invoked.filter((l) => INSTALLS.test(l) && !isQuickStart(l))).toEqual([]);
    for (const command of quickStart)
      expect(
        invoked.some((l) => l.startsWith(command)),
        command,
      ).toBe(true);
  });
});
