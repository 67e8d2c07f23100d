import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shimBuildOptions } from '../../runners/shim/bundle.ts';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import { DEFAULT_MASK } from '../../shared/domain/redaction.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import { type WrappedAssetType, wrapperPlaybook } from '../../shared/domain/wrappers.ts';

/**
 * The real shim (bundled with esbuild, as the runner images carry it) driving
 * the real ansible-playbook against localhost.
 */
const repo = resolve(import.meta.dirname, '../..');
const playbooks = join(repo, 'test/fixtures/playbooks');
const scriptAsset = join(repo, 'test/fixtures/assets/say hello.sh');
const shimSource = join(repo, 'runners/shim/main.ts');

let scratch: string;
let bundle: string;
let bundleInputs: string[];
let bundleImports: { path: string; external?: boolean }[];
let bundleGraph: Metafile['inputs'];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-shim-test-'));
  bundle = join(scratch, 'shim.mjs');
  const result = await build({ ...shimBuildOptions(repo, bundle), metafile: true, logLevel: 'silent' });
  bundleInputs = Object.keys(result.metafile.inputs);
  bundleGraph = result.metafile.inputs;
  bundleImports = Object.values(result.metafile.outputs).flatMap((o) => o.imports);
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

const localInventory = { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } };

function taskSpec(overrides: Partial<TaskSpec> = {}): TaskSpec {
  return {
    runId: 'run-test',
    kind: 'cluster_play',
    asset: { kind: 'file', path: join(playbooks, 'echo-var.yml') },
    assetType: 'playbook',
    inventory: localInventory,
    extraVars: {},
    secretVars: [],
    timeoutSeconds: 120,
    ...overrides,
  };
}

interface ShimRun {
  readonly child: ChildProcess;
  readonly mark: string;
  readonly tmpDir: string;
  readonly resultDir: string;
  output(): string;
  lines(): string[];
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Start the bundled shim (or the TypeScript source through tsx) with a minimal environment. */
function startShim(
  spec: TaskSpec | string,
  env: Record<string, string> = {},
  via: 'bundle' | 'tsx' = 'bundle',
): ShimRun {
  const mark = randomUUID();
  const tmpDir = mkdtempSync(join(scratch, 'tmp-'));
  const resultDir = mkdtempSync(join(scratch, 'result-'));
  const args = via === 'bundle' ? [bundle] : ['--import', 'tsx', shimSource];
  const child = spawn(process.execPath, args, {
    cwd: repo,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      RW_TASK: typeof spec === 'string' ? spec : JSON.stringify(spec),
      RW_TMP_DIR: tmpDir,
      RW_RESULT_DIR: resultDir,
      RW_TEST_MARK: mark,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  const onData = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
    for (const w of [...waiters]) {
      if (w.pattern.test(output)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.once('close', (code, signal) => done({ code, signal }));
  });
  return {
    child,
    mark,
    tmpDir,
    resultDir,
    output: () => output,
    lines: () => output.split('\n').filter((l) => l !== ''),
    waitFor: (pattern, timeoutMs = 15_000) =>
      new Promise<void>((done, fail) => {
        if (pattern.test(output)) return done();
        const timer = setTimeout(
          () => fail(new Error(`timed out waiting for ${pattern}; output so far:\n${output}`)),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: () => {
            clearTimeout(timer);
            done();
          },
        });
      }),
    exit,
  };
}

/** Live processes (not zombies) whose environment carries the test's marker: the shim and everything under it. */
function markedProcesses(mark: string): { pid: number; argv: string[] }[] {
  const found: { pid: number; argv: string[] }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (!readFileSync(`/proc/${name}/environ`, 'utf8').includes(`RW_TEST_MARK=${mark}`)) continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
      found.push({ pid: Number(name), argv });
    } catch {
      // The process went away while we looked.
    }
  }
  return found;
}

const exitRecord = (run: ShimRun): Record<string, unknown> =>
  JSON.parse(readFileSync(join(run.resultDir, 'exit.json'), 'utf8')) as Record<string, unknown>;

describe('task shim bundle', () => {
  it('bundles to one file that needs nothing but Node built-ins', () => {
    expect(bundleInputs.length).toBeGreaterThan(1);
    const own =
      /^(runners\/shim|shared\/domain|shared\/lib|node_modules\/zod\/(mini|v4\/(mini|core|locales)))\//;
    for (const input of bundleInputs) {
      // zod/mini (the task spec's schema, through shared/lib/zod.ts) is bundled in; the API's classic zod is not. Beyond those, only the
      // Secrets Manager client's own dependencies (below).
      expect({ input, allowed: own.test(input) || input.startsWith('node_modules/') }).toEqual({
        input,
        allowed: true,
      });
    }
    // Only secret-fetch.ts reaches past zod into node_modules, and only through a dynamic import (loaded when a
    // run's own secrets are fetched), so a task without them never evaluates the SDK.
    const reaching = Object.entries(bundleGraph).flatMap(([from, { imports }]) =>
      own.test(from) && !from.startsWith('node_modules/')
        ? imports
            .filter((i) => i.path.startsWith('node_modules/') && !own.test(i.path))
            .map((i) => ({ from, kind: i.kind }))
        : [],
    );
    expect(reaching).toEqual([{ from: 'runners/shim/secret-fetch.ts', kind: 'dynamic-import' }]);
    for (const imported of bundleImports) {
      expect(imported.external).toBe(true);
      expect(imported.path).toMatch(/^node:/);
    }
  });
});

describe('task shim running ansible-playbook', () => {
  it('streams the play, forwards extra vars and exits with the tool code', async () => {
    const run = startShim(taskSpec({ extraVars: { greeting: 'hello from the test' } }));

    const { code } = await run.exit;

    expect(code).toBe(0);
    expect(run.output()).toContain('"msg": "greeting is hello from the test"');
    expect(run.lines().at(-1)).toBe('remote-worker: ansible-playbook exited with code 0');
    expect(exitRecord(run)).toMatchObject({ exitCode: 0, signal: null });
    expect(readdirSync(run.tmpDir)).toEqual([]);
  });

  it('runs the TypeScript source through tsx too (the process executor default)', async () => {
    const run = startShim(taskSpec({ extraVars: { greeting: 'via tsx' } }), {}, 'tsx');

    const { code } = await run.exit;

    expect(code).toBe(0);
    expect(run.output()).toContain('greeting is via tsx');
  });

  it("exits with ansible-playbook's failure code and shows the message", async () => {
    const run = startShim(
      taskSpec({
        asset: { kind: 'file', path: join(playbooks, 'fail.yml') },
        extraVars: { reason: 'disk full' },
      }),
    );

    const { code } = await run.exit;

    expect(code).toBe(2);
    expect(run.output()).toContain('deliberate failure: disk full');
    expect(run.lines().at(-1)).toBe('remote-worker: ansible-playbook exited with code 2');
    expect(exitRecord(run)).toMatchObject({ exitCode: 2, signal: null });
  });

  it('hands a bound secret to the play and masks it in every printed form', async () => {
    const secret = `S3cr3t-${randomUUID().slice(0, 8)}{{ not templated }}`;
    const sha1 = execFileSync('python3', [
      '-c',
      'import hashlib,sys; print(hashlib.sha1(sys.argv[1].encode()).hexdigest())',
      secret,
    ])
      .toString()
      .trim();
    const run = startShim(
      taskSpec({
        asset: { kind: 'file', path: join(playbooks, 'print-secret.yml') },
        extraVars: { expected_sha1: sha1 },
        secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
      }),
      { RW_SECRET_0: secret },
    );

    const { code } = await run.exit;

    const output = run.output();
    expect(code).toBe(0);
    expect(output).toContain('the password is ********');
    expect(output).toContain('"password": "********"');
    expect(output).not.toContain(secret);
    expect(output).not.toContain(Buffer.from(secret).toString('base64').slice(0, 12));
    expect(output).not.toContain('S3cr3t');
  });

  it('keeps extra vars and secrets off every argv, in a private dir removed at exit', async () => {
    const extraValue = `xv-${randomUUID()}`;
    const secret = `sv-${randomUUID()}`;
    const run = startShim(
      taskSpec({
        asset: { kind: 'file', path: join(playbooks, 'pause.yml') },
        extraVars: { marker: extraValue, pause_seconds: 2 },
        secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
      }),
      { RW_SECRET_0: secret },
    );
    await run.waitFor(/Pausing for 2 seconds/);

    const processes = markedProcesses(run.mark);
    const [workDir] = readdirSync(run.tmpDir);
    const extraVarsFile = join(run.tmpDir, workDir ?? '', 'extra-vars.json');
    const fileModes = {
      dir: statSync(join(run.tmpDir, workDir ?? '')).mode & 0o777,
      file: statSync(extraVarsFile).mode & 0o777,
    };
    const fileContent = JSON.parse(readFileSync(extraVarsFile, 'utf8')) as Record<string, unknown>;
    const { code } = await run.exit;

    const playbookProcess = processes.find((p) => p.argv.some((a) => a.endsWith('ansible-playbook')));
    expect(playbookProcess?.argv).toContain(`@${extraVarsFile}`);
    for (const p of processes) {
      expect(p.argv.join(' ')).not.toContain(extraValue);
      expect(p.argv.join(' ')).not.toContain(secret);
    }
    expect(fileModes).toEqual({ dir: 0o700, file: 0o600 });
    expect(fileContent).toMatchObject({ marker: extraValue, db_password: { __ansible_unsafe: secret } });
    expect(code).toBe(0);
    expect(run.output()).toContain(`started, marker ${extraValue}`);
    expect(run.output()).not.toContain(secret);
    expect(readdirSync(run.tmpDir)).toEqual([]);
  });

  it('on SIGTERM stops the whole tool, removes its secrets files and records the signal', async () => {
    const run = startShim(
      taskSpec({
        asset: { kind: 'file', path: join(playbooks, 'pause.yml') },
        secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
      }),
      { RW_SECRET_0: 'a-secret-value' },
    );
    await run.waitFor(/Pausing for 60 seconds/);
    expect(readdirSync(run.tmpDir)).toHaveLength(1);

    run.child.kill('SIGTERM');
    const { code } = await run.exit;

    expect(code).toBe(128 + 15);
    expect(run.output()).toContain('remote-worker: received SIGTERM; stopping');
    expect(run.lines().at(-1)).toBe('remote-worker: ansible-playbook was stopped by SIGTERM');
    expect(exitRecord(run)).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
    expect(readdirSync(run.tmpDir)).toEqual([]);
    expect(markedProcesses(run.mark)).toEqual([]);
  });

  it('stops the tool when the spec timeout passes and exits 124', async () => {
    const run = startShim(
      taskSpec({ asset: { kind: 'file', path: join(playbooks, 'pause.yml') }, timeoutSeconds: 1 }),
    );

    const { code } = await run.exit;

    expect(code).toBe(124);
    expect(run.output()).toContain('remote-worker: timed out after 1s; stopping ansible-playbook');
    expect(exitRecord(run)).toMatchObject({ reason: 'timed out after 1s' });
    expect(markedProcesses(run.mark)).toEqual([]);
  });

  it('runs a .sh asset through its wrapper playbook, without extra vars', async () => {
    const run = startShim(
      taskSpec({
        kind: 'vm',
        asset: { kind: 'file', path: scriptAsset },
        assetType: 'script',
        inventory: { all: { hosts: { 'lab-vm': { ansible_host: '127.0.0.1', ...LOCALHOST_VARS } } } },
        extraVars: { greeting: 'must not arrive' },
      }),
    );

    const { code } = await run.exit;

    const running = run.lines().find((l) => l.startsWith('remote-worker: running '));
    expect(code).toBe(0);
    expect(run.output()).toContain('hello from say hello.sh in bash');
    expect(run.output()).toContain('greeting variable: unset');
    expect(run.output()).not.toContain('must not arrive');
    expect(running).toMatch(/wrapper\.yml$/);
    // Compare words, not text: a random temp dir name may well contain "-e".
    expect(running?.split(' ')).not.toContain('-e');
    expect(running).not.toContain('extra-vars');
  });

  it('downloads a url asset, and refuses one over the size cap', async () => {
    const server: Server = createServer((req, res) => {
      if (req.url?.startsWith('/assets/echo.yml')) {
        res.end(readFileSync(join(playbooks, 'echo-var.yml')));
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const ok = startShim(
        taskSpec({
          asset: { kind: 'url', url: `${base}/assets/echo.yml?X-Signature=abc` },
          extraVars: { greeting: 'fetched' },
        }),
      );
      const tooBig = startShim(taskSpec({ asset: { kind: 'url', url: `${base}/assets/echo.yml` } }), {
        RW_ASSET_MAX_BYTES: '10',
      });
      const missing = startShim(taskSpec({ asset: { kind: 'url', url: `${base}/nope.yml?token=hush` } }));

      const [okExit, bigExit, missingExit] = await Promise.all([ok.exit, tooBig.exit, missing.exit]);

      expect(okExit.code).toBe(0);
      expect(ok.output()).toContain('greeting is fetched');
      expect(bigExit.code).toBe(125);
      expect(tooBig.output()).toContain('larger than the 10-byte limit');
      expect(missingExit.code).toBe(125);
      expect(missing.output()).toContain(`could not fetch the asset ${base}/nope.yml: HTTP 404`);
      expect(missing.output()).not.toContain('hush');
    } finally {
      server.close();
    }
  });

  it('refuses an invalid spec with exit code 125 and records why', async () => {
    const run = startShim('{"runId": "x", "kind": "teleport"}');

    const { code } = await run.exit;

    expect(code).toBe(125);
    expect(run.output()).toContain('invalid task spec: kind is not a run kind');
    expect(exitRecord(run)).toMatchObject({ exitCode: 125 });
  });

  it('runs kubectl for a k8s op with a kubeconfig given as content, written to a private file', async () => {
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]',
      'users: [{name: u, user: {token: tok-12345}}]',
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
      '',
    ].join('\n');
    const run = startShim(
      taskSpec({
        kind: 'k8s_op',
        operation: { action: 'apply', namespace: 'apps' },
        asset: { kind: 'file', path: join(playbooks, 'echo-var.yml') },
      }),
      { KUBECONFIG: kubeconfig, RW_REDACT_ENV: 'KUBE_TOKEN', KUBE_TOKEN: 'tok-12345' },
    );

    const { code } = await run.exit;

    const running = run.lines().find((l) => l.startsWith('remote-worker: running '));
    expect(running).toBe(
      `remote-worker: running kubectl apply -f ${join(playbooks, 'echo-var.yml')} --namespace apps`,
    );
    expect(code).not.toBe(0);
    expect(run.lines().at(-1)).toBe(`remote-worker: kubectl exited with code ${code}`);
    expect(run.output()).not.toContain('tok-12345');
    expect(readdirSync(run.tmpDir)).toEqual([]);
  });
});

/** Prints everything a connection-material run holds: the key file, a secret env, the kubeconfig. */
const CONNECTION_PLAYBOOK = `
- name: Print connection material
  hosts: all
  gather_facts: false
  vars:
    kubeconfig_text: "{{ lookup('file', lookup('env', 'KUBECONFIG')) }}"
  tasks:
    - name: Look at the key file
      ansible.builtin.stat:
        path: "{{ ansible_ssh_private_key_file }}"
      register: key_stat
    - name: Where and how private
      ansible.builtin.debug:
        msg: "key mode {{ key_stat.stat.mode }} at {{ ansible_ssh_private_key_file }}"
    - name: Ask OpenSSH whether it can load the key
      ansible.builtin.command:
        argv: [ssh-keygen, -y, -f, "{{ ansible_ssh_private_key_file }}"]
      register: keygen
      changed_when: false
      failed_when: false
    - name: OpenSSH verdict
      ansible.builtin.debug:
        msg: "ssh-keygen rc {{ keygen.rc }}"
    - name: The key, whole
      ansible.builtin.debug:
        msg: "{{ lookup('file', ansible_ssh_private_key_file) }}"
    - name: The key, line by line
      ansible.builtin.debug:
        msg: "{{ lookup('file', ansible_ssh_private_key_file).splitlines() }}"
    - name: The key file, base64
      ansible.builtin.slurp:
        src: "{{ ansible_ssh_private_key_file }}"
      register: key_slurp
    - name: Base64 of the key file
      ansible.builtin.debug:
        msg: "{{ key_slurp.content }}"
    - name: Is the key still in the environment
      ansible.builtin.debug:
        msg: "key env length {{ lookup('env', 'RW_SECRET_KEY') | length }}"
    - name: The Portainer token and URL
      ansible.builtin.debug:
        msg: "token {{ lookup('env', 'PORTAINER_API_TOKEN') }} for {{ lookup('env', 'PORTAINER_URL') }}"
    - name: The kubeconfig, whole and line by line
      ansible.builtin.debug:
        msg: "{{ [kubeconfig_text] + kubeconfig_text.splitlines() }}"
    - name: The bearer token alone
      ansible.builtin.debug:
        msg: "Authorization: Bearer {{ (kubeconfig_text | from_yaml).users[0].user.token }}"
`;

describe('task shim handing connection material to the tool', () => {
  it('writes the SSH key to a 0600 file, passes secret env and kubeconfig, and shows only masks', async () => {
    const keyDir = mkdtempSync(join(scratch, 'key-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'rw-test', '-f', join(keyDir, 'id')]);
    // Without its final newline: the shim must add it back, or OpenSSH refuses the file.
    const key = readFileSync(join(keyDir, 'id'), 'utf8').trimEnd();
    const portainerToken = `ptr_${randomUUID()}`;
    const bearer = `kube-${randomUUID()}`;
    const kubeconfig = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: lab',
      '  cluster:',
      '    server: https://127.0.0.1:6443',
      'users:',
      '- name: runner',
      '  user:',
      `    token: ${bearer}`,
      'contexts:',
      '- name: lab',
      '  context: {cluster: lab, user: runner}',
      'current-context: lab',
      '',
    ].join('\n');
    const playbook = join(scratch, 'connection-material.yml');
    writeFileSync(playbook, CONNECTION_PLAYBOOK);
    const run = startShim(
      taskSpec({
        asset: { kind: 'file', path: playbook },
        secretEnvNames: ['PORTAINER_API_TOKEN', 'KUBECONFIG'],
        sshKeyEnv: 'RW_SECRET_KEY',
        env: { PORTAINER_URL: 'https://portainer.example:9443' },
      }),
      { RW_SECRET_KEY: key, PORTAINER_API_TOKEN: portainerToken, KUBECONFIG: kubeconfig },
    );

    const { code } = await run.exit;

    const output = run.output();
    const keyFile = /key mode 0600 at (\S+?)"/.exec(output)?.[1];
    expect(code).toBe(0);
    expect(keyFile?.startsWith(run.tmpDir)).toBe(true);
    expect(existsSync(keyFile ?? '/')).toBe(false);
    expect(readdirSync(run.tmpDir)).toEqual([]);
    expect(output).toContain('ssh-keygen rc 0');
    expect(output).toContain('key env length 0');
    expect(output).toContain(`token ${DEFAULT_MASK} for https://portainer.example:9443`);
    expect(output).toContain(`Authorization: Bearer ${DEFAULT_MASK}`);
    expect(run.lines().find((l) => l.startsWith('remote-worker: running '))).toContain(
      'ansible_ssh_private_key_file',
    );
    const secretTexts = [
      portainerToken,
      bearer,
      ...key.split('\n').slice(1, -1),
      ...kubeconfig.split('\n').filter((l) => l.trim().length >= 2),
      Buffer.from(`${key}\n`).toString('base64').slice(0, 40),
    ];
    for (const text of secretTexts)
      expect({ text, leaked: output.includes(text.trim()) }).toEqual({ text, leaked: false });
    // Every line the play printed from the key or the kubeconfig came out as a mask.
    const printedLines = output.split('\n').filter((l) => /^\s+" *\*{8}",?$/.test(l));
    expect(printedLines.length).toBeGreaterThanOrEqual(
      key.split('\n').length + kubeconfig.split('\n').length - 2,
    );
  });

  it.each([
    [{ RW_TASK: '{}' }, 'RW_TASK'],
    [{ PATH: '/tmp/evil', GREETING: 'hi' }, 'PATH'],
    [{ ANSIBLE_LOCAL_TEMP: '/tmp/shared' }, 'ANSIBLE_LOCAL_TEMP'],
  ])('refuses a spec whose env would set %j', async (env, name) => {
    const run = startShim(taskSpec({ env }));

    const { code } = await run.exit;

    expect(code).toBe(125);
    expect(run.output()).toContain(`invalid task spec: env must not set ${name}:`);
    expect(run.output()).not.toContain('remote-worker: running');
    expect(exitRecord(run)).toMatchObject({ exitCode: 125 });
  });

  it('refuses to run when a listed secret env or the SSH key is missing', async () => {
    const run = startShim(taskSpec({ secretEnvNames: ['PORTAINER_API_TOKEN'], sshKeyEnv: 'RW_SECRET_KEY' }), {
      RW_SECRET_KEY: 'k',
    });

    const { code } = await run.exit;

    expect(code).toBe(125);
    expect(run.output()).toContain('remote-worker: secret environment PORTAINER_API_TOKEN is not set');
    expect(run.output()).not.toContain('remote-worker: running');
  });
});

describe('wrapper playbooks', () => {
  it.each(['script', 'powershell', 'rpm', 'deb'] satisfies WrappedAssetType[])(
    'pass ansible-playbook --syntax-check (%s)',
    (type) => {
      const file = join(scratch, `wrapper-${type}.yml`);
      writeFileSync(file, wrapperPlaybook(type, "/srv/assets/it's {{ x }}.bin", { disableGpgCheck: true }));
      const inventory = join(scratch, 'inventory.json');
      writeFileSync(inventory, JSON.stringify(localInventory));

      const out = execFileSync('ansible-playbook', ['--syntax-check', '-i', inventory, file], {
        env: { ...process.env, ANSIBLE_NOCOLOR: '1' },
      }).toString();

      expect(out).toContain('playbook:');
      expect(existsSync(file)).toBe(true);
    },
  );
});
