import { describe, expect, it } from 'vitest';
import {
  canInstall,
  detectFamily,
  type Host,
  installCommand,
  stopMessage,
} from '../../../bin/prerequisites/plan.ts';
import { START, TEST } from '../../../bin/prerequisites/sets.ts';

const missingAll = (sets: typeof START) =>
  sets.map((prerequisite) => ({ prerequisite, missing: ['absent'] }));

describe('detectFamily', () => {
  it.each([
    ['ID=debian\n', 'debian'],
    ['ID=ubuntu\nID_LIKE=debian\n', 'debian'],
    ['ID="rocky"\nID_LIKE="rhel centos fedora"\n', 'fedora'],
    ['ID=fedora\n', 'fedora'],
    ['ID=alpine\n', 'alpine'],
    ['ID=arch\n', undefined],
  ] as const)('reads %j as %s', (osRelease, family) => {
    expect(detectFamily(osRelease, 'linux')).toBe(family);
  });

  it('takes macOS from the platform, which has no /etc/os-release', () => {
    expect(detectFamily(undefined, 'darwin')).toBe('macos');
  });
});

describe('canInstall', () => {
  it('installs only as root on Debian with apt-get', () => {
    const debianRoot: Host = { family: 'debian', root: true, aptGet: true };

    expect(canInstall(debianRoot)).toBe(true);
    expect(canInstall({ ...debianRoot, root: false })).toBe(false);
    expect(canInstall({ ...debianRoot, aptGet: false })).toBe(false);
    expect(canInstall({ ...debianRoot, family: 'fedora' })).toBe(false);
  });
});

describe('installCommand', () => {
  it('gives each manager its exact command, with sudo only for a non-root operator', () => {
    expect(installCommand('apt', ['ansible'], false)).toBe(
      'sudo apt-get update && sudo apt-get install -y --no-install-recommends ansible',
    );
    expect(installCommand('apt', ['ansible'], true)).toBe(
      'apt-get update && apt-get install -y --no-install-recommends ansible',
    );
    expect(installCommand('dnf', ['ansible'], false)).toBe('sudo dnf install -y ansible');
    expect(installCommand('apk', ['ansible'], false)).toBe('sudo apk add ansible');
    expect(installCommand('brew', ['ansible'], false)).toBe('brew install ansible');
    expect(installCommand('pip', ['cfn-lint>=1,<2'], true)).toBe("python3 -m pip install 'cfn-lint>=1,<2'");
  });
});

describe('stopMessage', () => {
  it('puts this machine first and names a family without a package instead of a failing command', () => {
    const host: Host = { family: 'fedora', root: false, aptGet: false };
    const lines = stopMessage('npm test', missingAll(TEST), host).split('\n');

    const install = lines.findIndex((l) => l.startsWith('Install it'));
    expect(lines[install + 1]).toMatch(
      /^ {2}Fedora\/RHEL \(this machine\): no package named here for postgresql/,
    );
    expect(lines).toContain(
      '  Debian/Ubuntu: sudo apt-get update && sudo apt-get install -y --no-install-recommends postgresql python3-psycopg2 openssh-server openssl podman runc catatonit iptables chromium debootstrap kubectl util-linux coreutils bash dash',
    );
    expect(lines).toContain(
      "  Python (the python3 on PATH): python3 -m pip install 'moto[server]>=5,<6' 'cfn-lint>=1,<2' openapi-spec-validator",
    );
  });

  it('tells how to opt out', () => {
    const text = stopMessage('npm start', missingAll(START.slice(1)), {
      family: 'debian',
      root: true,
      aptGet: true,
    });

    expect(text).toContain('REMOTE_WORKER_PREREQUISITES=skip');
    expect(text).toContain(
      'Debian/Ubuntu (this machine): apt-get update && apt-get install -y --no-install-recommends ansible openssh-client',
    );
  });
});
