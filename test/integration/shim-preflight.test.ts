import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  findOnPath,
  PYWINRM_MISSING,
  shebangInterpreter,
  toolFor,
  usesWinrm,
} from '../../runners/shim/preflight.ts';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { shimProcess } from '../support/shim-process.ts';

/**
 * The shim's preflight: the real shim (TypeScript source through tsx) started
 * with a PATH that lacks a tool, and the host's real ansible-playbook, whose
 * Python (Debian's /usr/bin/python3) has no pywinrm. The image test
 * (test/runners/images.test.ts) shows the other side: the same WinRM spec
 * passes preflight in the ansible-winrm image.
 */

const repo = resolve(import.meta.dirname, '../..');
const playbook = join(repo, 'test/fixtures/playbooks/echo-var.yml');

let scratch: string;
/** A PATH directory holding only node (the shim itself is started by absolute path). */
let bareBin: string;
let server: Server;
let assetUrl: string;
let assetRequests = 0;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-preflight-'));
  bareBin = join(scratch, 'bin');
  mkdirSync(bareBin);
  server = createServer((_req, res) => {
    assetRequests += 1;
    res.end('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  assetUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/manifest.yml`;
});

afterAll(async () => {
  await new Promise<void>((done) => server.close(() => done()));
  rmSync(scratch, { recursive: true, force: true });
});

function spec(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return {
    runId: 'run-preflight',
    kind: 'cluster_play',
    asset: { kind: 'file', path: playbook },
    assetType: 'playbook',
    inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
    extraVars: {},
    secretVars: [],
    timeoutSeconds: 60,
    ...overrides,
  };
}

const runShim = (task: TaskSpec, path: string) =>
  shimProcess({ PATH: path, HOME: scratch, RW_TASK: JSON.stringify(task), RW_TMP_DIR: scratch }, scratch);

const winrmHost = {
  ansible_host: '127.0.0.1',
  ansible_port: 1,
  ansible_connection: 'winrm',
  ansible_winrm_transport: 'ntlm',
};

describe('the shim preflight', () => {
  it('stops a helm operation with exit 127 when the image has no helm', async () => {
    const task = spec({
      kind: 'k8s_op',
      operation: { action: 'helm_repo_add', repoName: 'eso', repoUrl: 'https://charts.example/' },
    });

    const run = await runShim(task, `${bareBin}:/usr/bin:/bin`);

    expect(run.code, run.out).toBe(127);
    expect(run.out).toContain('remote-worker: helm is not installed in this image (not found on PATH');
    expect(run.out).toContain('a k8s_op (helm_repo_add) run needs it');
    expect(run.out).toContain('remote-worker: failed before the tool could finish (exit code 127)');
    expect(run.exitRecord).toMatchObject({
      exitCode: 127,
      reason: expect.stringContaining('helm is not installed'),
    });
  }, 30_000);

  it('stops a kubectl apply before it fetches the manifest when the image has no kubectl', async () => {
    const before = assetRequests;
    const task = spec({
      kind: 'k8s_op',
      asset: { kind: 'url', url: assetUrl },
      operation: { action: 'apply' },
    });

    const run = await runShim(task, bareBin);

    expect(run.code, run.out).toBe(127);
    expect(run.out).toContain('remote-worker: kubectl is not installed in this image');
    expect(assetRequests).toBe(before);
  }, 30_000);

  it('stops a playbook run with exit 127 when the image has no ansible-playbook', async () => {
    const run = await runShim(spec(), bareBin);

    expect(run.code, run.out).toBe(127);
    expect(run.out).toContain('remote-worker: ansible-playbook is not installed in this image');
    expect(run.out).not.toContain('running ansible-playbook');
  }, 30_000);

  it('stops a WinRM run with the seeds’ "pywinrm is not installed" when ansible-playbook’s Python lacks it', async () => {
    const python = shebangInterpreter(
      findOnPath('ansible-playbook', process.env.PATH) ?? '',
      process.env.PATH,
    );
    const task = spec({ kind: 'vm', inventory: { all: { hosts: { 'win-1': winrmHost } } } });

    const run = await runShim(task, process.env.PATH ?? '/usr/bin:/bin');

    expect(python).toBe('/usr/bin/python3');
    expect(run.code, run.out).toBe(127);
    expect(run.out).toContain(`remote-worker: ${PYWINRM_MISSING} for /usr/bin/python3, the Python that runs`);
    expect(run.out).not.toContain('running ansible-playbook');
  }, 30_000);

  it('lets the same host over SSH through to ansible-playbook', async () => {
    const task = spec({
      kind: 'vm',
      inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
      extraVars: { greeting: 'preflight passed' },
    });

    const run = await runShim(task, process.env.PATH ?? '/usr/bin:/bin');

    expect(run.out).toContain('remote-worker: running ansible-playbook');
    expect(run.code, run.out).toBe(0);
  }, 60_000);
});

describe('toolFor', () => {
  it('picks ansible-playbook for plays, kubectl or helm for k8s operations', () => {
    expect(toolFor({ kind: 'vm' })).toBe('ansible-playbook');
    expect(toolFor({ kind: 'portainer' })).toBe('ansible-playbook');
    expect(toolFor({ kind: 'k8s_op', operation: { action: 'get_secret', namespace: 'n', name: 's' } })).toBe(
      'kubectl',
    );
    expect(toolFor({ kind: 'k8s_op', operation: { action: 'delete' } })).toBe('kubectl');
    expect(toolFor({ kind: 'k8s_op', operation: { action: 'helm_upgrade', release: 'r', chart: 'c' } })).toBe(
      'helm',
    );
  });
});

describe('usesWinrm', () => {
  const base = spec();

  it('sees WinRM on a host, on the group or in the extra vars, and nowhere for a k8s op', () => {
    const hosts = { a: { ansible_connection: 'ssh' }, b: winrmHost };

    expect(usesWinrm(base)).toBe(false);
    expect(usesWinrm({ ...base, inventory: { all: { hosts } } })).toBe(true);
    expect(
      usesWinrm({ ...base, inventory: { all: { hosts: { a: {} }, vars: { ansible_connection: 'winrm' } } } }),
    ).toBe(true);
    expect(usesWinrm({ ...base, extraVars: { ansible_connection: 'winrm' } })).toBe(true);
    expect(usesWinrm({ ...base, kind: 'k8s_op', inventory: { all: { hosts } } })).toBe(false);
  });
});

describe('findOnPath and shebangInterpreter', () => {
  it('skip what is not an executable file and follow /usr/bin/env to the named program', () => {
    const dir = mkdtempSync(join(scratch, 'path-'));
    const other = mkdtempSync(join(scratch, 'path-'));
    writeFileSync(join(dir, 'tool'), '#!/bin/sh\n');
    mkdirSync(join(dir, 'python3'));
    const script = join(other, 'tool');
    writeFileSync(script, '#!/usr/bin/env -S python3 -E\nprint(1)\n');
    chmodSync(script, 0o755);
    const python = join(other, 'python3');
    copyFileSync('/bin/true', python);
    chmodSync(python, 0o755);
    const path = `relative:${dir}:${other}`;

    expect(findOnPath('tool', path)).toBe(script);
    expect(findOnPath('python3', path)).toBe(python);
    expect(findOnPath('missing', path)).toBeUndefined();
    expect(shebangInterpreter(script, path)).toBe(python);
    expect(shebangInterpreter(python, path)).toBeUndefined();
    expect(shebangInterpreter(join(dir, 'tool'), path)).toBe('/bin/sh');
  });
});
