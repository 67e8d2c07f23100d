import type { ConfigFile, Manager, Prerequisite } from './sets.ts';

/**
 * What to do about missing prerequisites, as pure functions of what is
 * missing and what the host is: install them (root on Debian with apt-get),
 * or stop with the exact command per distribution family.
 *
 * @example
 * if (!canInstall(host)) process.stderr.write(stopMessage('npm start', missing, host));
 */

export type Family = 'debian' | 'fedora' | 'alpine' | 'macos';

export interface Host {
  /** Undefined when neither /etc/os-release nor the platform tells. */
  readonly family: Family | undefined;
  readonly root: boolean;
  readonly aptGet: boolean;
}

/** From /etc/os-release's ID and ID_LIKE (Ubuntu is `ID_LIKE=debian`, Rocky is `ID_LIKE="rhel centos fedora"`). */
export function detectFamily(osRelease: string | undefined, platform: NodeJS.Platform): Family | undefined {
  if (platform === 'darwin') return 'macos';
  const field = (name: string) =>
    new RegExp(`^${name}=("?)([^"\\n]*)\\1$`, 'm')
      .exec(osRelease ?? '')?.[2]
      ?.toLowerCase()
      .split(/\s+/) ?? [];
  const ids = [...field('ID'), ...field('ID_LIKE')];
  if (ids.some((id) => id === 'debian' || id === 'ubuntu')) return 'debian';
  if (ids.some((id) => ['fedora', 'rhel', 'centos'].includes(id))) return 'fedora';
  if (ids.includes('alpine')) return 'alpine';
  return undefined;
}

/** Installing is ours to do only where it cannot surprise: root, Debian, apt-get there. */
export const canInstall = (host: Host): boolean => host.family === 'debian' && host.root && host.aptGet;

const FAMILIES: readonly { family: Family; label: string; manager: Manager }[] = [
  { family: 'debian', label: 'Debian/Ubuntu', manager: 'apt' },
  { family: 'fedora', label: 'Fedora/RHEL', manager: 'dnf' },
  { family: 'alpine', label: 'Alpine', manager: 'apk' },
  { family: 'macos', label: 'macOS', manager: 'brew' },
];

const shellQuote = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word}'`);

/** The packages of `missing` for one manager, in order, once each; `undefined` names those it has none for. */
export function packagesFor(
  missing: readonly Prerequisite[],
  manager: Manager,
): { packages: string[]; unpackaged: string[] } {
  const packages: string[] = [];
  const unpackaged: string[] = [];
  for (const p of missing) {
    const names = p.packages[manager];
    // A Python package is installed with pip on every family.
    if (names === undefined && p.packages.pip !== undefined) continue;
    if (names === undefined) unpackaged.push(p.name);
    for (const name of names ?? []) if (!packages.includes(name)) packages.push(name);
  }
  return { packages, unpackaged };
}

/** The one command that installs `packages` with `manager`; sudo where the operator is not root. */
export function installCommand(manager: Manager, packages: readonly string[], root: boolean): string {
  const sudo = root ? '' : 'sudo ';
  const list = packages.map(shellQuote).join(' ');
  switch (manager) {
    case 'apt':
      return `${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${list}`;
    case 'dnf':
      return `${sudo}dnf install -y ${list}`;
    case 'apk':
      return `${sudo}apk add ${list}`;
    case 'brew':
      return `brew install ${list}`;
    case 'pip':
      return `python3 -m pip install ${list}`;
  }
}

/**
 * Why the command stopped, what is missing, and the commands that install
 * it: every family, this machine's first; a family that lacks a package for
 * something says so instead of a command that would fail.
 */
export function stopMessage(
  command: 'npm start' | 'npm test',
  missing: readonly { prerequisite: Prerequisite; missing: readonly string[] }[],
  host: Host,
  configs: readonly ConfigFile[] = [],
): string {
  const lines = [`remote-worker: ${command} needs what this machine lacks:`];
  for (const { prerequisite, missing: what } of missing) {
    lines.push(`  ${prerequisite.name}: ${prerequisite.why} (${what.join('; ')})`);
  }
  for (const config of configs) lines.push(`  ${config.path}: ${config.why} (absent)`);
  // An entry no manager packages (Node.js itself) gets its own line, not one per family.
  const byHand = missing.map((m) => m.prerequisite).filter((p) => Object.keys(p.packages).length === 0);
  const prerequisites = missing.map((m) => m.prerequisite).filter((p) => !byHand.includes(p));
  lines.push('Install it, then run the command again:');
  for (const p of byHand)
    lines.push(`  ${p.name}: ${p.why}: install it from its project or your distribution`);
  const ordered = [...FAMILIES].sort(
    (a, b) => Number(b.family === host.family) - Number(a.family === host.family),
  );
  for (const { family, label, manager } of ordered) {
    const { packages, unpackaged } = packagesFor(prerequisites, manager);
    const mark = family === host.family ? ' (this machine)' : '';
    if (unpackaged.length > 0) {
      lines.push(`  ${label}${mark}: no package named here for ${unpackaged.join(', ')}`);
    } else if (packages.length > 0) {
      lines.push(
        `  ${label}${mark}: ${installCommand(manager, packages, host.root && family === host.family)}`,
      );
    }
  }
  const pip = packagesFor(
    prerequisites.filter((p) => p.packages.pip !== undefined),
    'pip',
  ).packages;
  if (pip.length > 0) lines.push(`  Python (the python3 on PATH): ${installCommand('pip', pip, true)}`);
  for (const config of configs) {
    lines.push(
      `  ${config.path}:`,
      ...config.content
        .trimEnd()
        .split('\n')
        .map((l) => `      ${l}`),
    );
  }
  lines.push(
    'Or set REMOTE_WORKER_PREREQUISITES=skip to start without them (a relay host that runs only',
    'containers; LOCAL_EXECUTOR=docker needs no Ansible here and skips the check for npm start).',
    '',
  );
  return lines.join('\n');
}
