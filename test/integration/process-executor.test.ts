import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessExecutor } from '../../shared/adapters/relay/process-executor.ts';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import type { ExecutionResult } from '../../shared/ports/executor.ts';
import type { LogLineInput } from '../../shared/ports/log-store.ts';

/**
 * The process executor with the real shim (bundled, as a relay host would run
 * it) and the real ansible-playbook. A relay crash is a real SIGKILL of a
 * separate Node process that started the task.
 */
const repo = resolve(import.meta.dirname, '../..');
const playbooks = join(repo, 'test/fixtures/playbooks');

let scratch: string;
let shimPath: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-procexec-test-'));
  shimPath = join(scratch, 'shim.mjs');
  await build({
    entryPoints: [join(repo, 'runners/shim/main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    outfile: shimPath,
    logLevel: 'silent',
  });
});

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function workDir(): string {
  const dir = join(scratch, `run-${randomUUID()}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

function spec(runId: string, playbook: string, extraVars: Record<string, unknown> = {}): TaskSpec {
  return {
    runId,
    kind: 'cluster_play',
    asset: { kind: 'file', path: join(playbooks, playbook) },
    assetType: 'playbook',
    inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
    extraVars,
    secretVars: [],
    timeoutSeconds: 300,
  };
}

/** Collects what an executor ships; resolves waiters when a line matches. */
function collector() {
  const lines: LogLineInput[] = [];
  const waiters: { pattern: RegExp; done: () => void }[] = [];
  const sink = (batch: readonly LogLineInput[]): void => {
    lines.push(...batch);
    for (const w of [...waiters]) {
      if (lines.some((l) => w.pattern.test(l.text))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.done();
      }
    }
  };
  const waitFor = (pattern: RegExp, timeoutMs = 15_000): Promise<void> =>
    new Promise((done, fail) => {
      if (lines.some((l) => pattern.test(l.text))) return done();
      const timer = setTimeout(
        () => fail(new Error(`no line matched ${pattern}: ${JSON.stringify(lines)}`)),
        timeoutMs,
      );
      waiters.push({
        pattern,
        done: () => {
          clearTimeout(timer);
          done();
        },
      });
    });
  return { lines, sink, waitFor, texts: () => lines.map((l) => l.text) };
}

interface Proc {
  readonly pid: number;
  readonly pgid: number;
  readonly state: string;
  readonly starttime: string;
}

function proc(pid: number): Proc | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid, state: f[0] ?? '', pgid: Number(f[2]), starttime: f[19] ?? '' };
  } catch {
    return undefined;
  }
}

/**
 * Every process still running in a process group. Zombies are left out: they
 * have exited already, and PID 1 on this machine reaps orphans only every few
 * seconds.
 */
function liveGroupMembers(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .map((n) => proc(Number(n)))
    .filter((p): p is Proc => p !== undefined && p.pgid === pgid && p.state !== 'Z')
    .map((p) => p.pid);
}

function liveWithEnv(entry: string): number[] {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .filter((n) => {
      try {
        return (
          proc(Number(n))?.state !== 'Z' &&
          readFileSync(`/proc/${n}/environ`, 'utf8').split('\0').includes(entry)
        );
      } catch {
        return false;
      }
    })
    .map(Number);
}

const pidOf = (handle: string): number => Number(handle.split(':')[1]);

describe('ProcessExecutor', () => {
  it('runs the task, streams its lines and resolves with the exit code', async () => {
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}`, shimPath, pollMs: 50 });
    const dir = workDir();
    const out = collector();
    const secret = `pw-${randomUUID()}`;
    const request = {
      runId: 'run-ok',
      image: '',
      spec: {
        ...spec('run-ok', 'echo-var.yml', { greeting: 'streamed' }),
        secretVars: [{ var: 'db_password', env: 'RW_SECRET_0' }],
      },
      secretEnv: { RW_SECRET_0: secret },
      workDir: dir,
    };

    const exec = await executor.start(request, out.sink);
    const pid = pidOf(exec.handle);
    const starttime = proc(pid)?.starttime;
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    const result = await exec.done;

    expect(exec.handle).toBe(`process:${pid}:${starttime}`);
    expect(environ).toContain(`RW_SECRET_0=${secret}`);
    expect(result).toEqual({ exitCode: 0 });
    expect(out.lines).toContainEqual({ stream: 'stdout', text: '    "msg": "greeting is streamed"' });
    expect(out.lines.at(-1)).toEqual({
      stream: 'system',
      text: 'remote-worker: ansible-playbook exited with code 0',
    });
    expect(statSync(join(dir, 'task.json')).mode & 0o777).toBe(0o600);
    for (const file of readdirSync(dir)) {
      expect(readFileSync(join(dir, file), 'utf8')).not.toContain(secret);
    }
    expect(readdirSync(dir).filter((n) => n.startsWith('rw-task-'))).toEqual([]);
  });

  it("runs a play from a work dir too deep for ssh's control sockets, their own dir removed at the end", async () => {
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}`, shimPath, pollMs: 50 });
    const out = collector();
    // A data dir under a home directory, then the run's id and attempt: the private dir's cp would not fit.
    const dir = join(scratch, 'd'.repeat(70), `run-${randomUUID()}.1`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const play = join(scratch, 'control-dir.yml');
    writeFileSync(
      play,
      [
        '- hosts: all',
        '  gather_facts: false',
        '  tasks:',
        "    - debug: { msg: \"control dir {{ lookup('env', 'ANSIBLE_SSH_CONTROL_PATH_DIR') }}\" }",
        '',
      ].join('\n'),
    );
    const request = {
      runId: 'run-deep',
      image: '',
      spec: { ...spec('run-deep', 'echo-var.yml'), asset: { kind: 'file' as const, path: play } },
      secretEnv: {},
      workDir: dir,
    };

    const exec = await executor.start(request, out.sink);

    expect(await exec.done).toEqual({ exitCode: 0 });
    const shown =
      out
        .texts()
        .join('\n')
        .match(/control dir (\S+?)"/)?.[1] ?? '';
    expect(shown).toMatch(/^\/tmp\/rw-ssh-/);
    expect(Buffer.byteLength(join(shown, 'a448b908de.nAjpGPlk8VjO3Q6a'))).toBeLessThanOrEqual(107);
    expect(existsSync(shown)).toBe(false);
  });

  it('reports a failing play with its code, running the TypeScript shim through tsx by default', async () => {
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}`, pollMs: 50 });
    const out = collector();

    const exec = await executor.start(
      { runId: 'run-fail', image: '', spec: spec('run-fail', 'fail.yml'), secretEnv: {}, workDir: workDir() },
      out.sink,
    );

    expect(await exec.done).toEqual({ exitCode: 2 });
    expect(out.texts().join('\n')).toContain('deliberate failure: no reason given');
  });

  it('kill stops the whole process group and resolves once it is gone', async () => {
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}`, shimPath, pollMs: 50 });
    const out = collector();
    const dir = workDir();
    const exec = await executor.start(
      { runId: 'run-kill', image: '', spec: spec('run-kill', 'pause.yml'), secretEnv: {}, workDir: dir },
      out.sink,
    );
    await out.waitFor(/Pausing for 60 seconds/);
    const pgid = pidOf(exec.handle);
    expect(liveGroupMembers(pgid).length).toBeGreaterThan(0);

    await exec.kill(5000);

    expect(liveGroupMembers(pgid)).toEqual([]);
    expect(await exec.done).toEqual({ signal: 'SIGTERM' });
    expect(out.texts()).toContain('remote-worker: ansible-playbook was stopped by SIGTERM');
    expect(readdirSync(dir).filter((n) => n.startsWith('rw-task-'))).toEqual([]);
  });

  it('kill falls back to SIGKILL for a group that ignores SIGTERM', async () => {
    const stubborn = join(scratch, 'stubborn.mjs');
    writeFileSync(
      stubborn,
      [
        "import { spawn } from 'node:child_process';",
        "process.on('SIGTERM', () => console.log('ignoring SIGTERM'));",
        "spawn('sh', ['-c', 'trap \"\" TERM; sleep 60'], { stdio: 'inherit' });",
        "console.log('ready');",
        'setInterval(() => {}, 1000);',
      ].join('\n'),
    );
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}`, shimPath: stubborn, pollMs: 50 });
    const out = collector();
    const exec = await executor.start(
      {
        runId: 'run-stubborn',
        image: '',
        spec: spec('run-stubborn', 'pause.yml'),
        secretEnv: {},
        workDir: workDir(),
      },
      out.sink,
    );
    await out.waitFor(/^ready$/);
    const pgid = pidOf(exec.handle);

    const started = Date.now();
    await exec.kill(300);

    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(liveGroupMembers(pgid)).toEqual([]);
    expect(out.texts()).toContain('ignoring SIGTERM');
    expect(await exec.done).toEqual({ signal: 'SIGKILL' });
  });

  it('adopts a running task after the relay that started it was killed, without duplicating lines', async () => {
    const executorId = `t-${randomUUID()}`;
    const dir = workDir();
    const relayScript = join(scratch, 'relay.mjs');
    writeFileSync(
      relayScript,
      [
        `import { ProcessExecutor } from ${JSON.stringify(join(repo, 'shared/adapters/relay/process-executor.ts'))};`,
        'const [dir, specJson, executorId, shimPath] = process.argv.slice(2);',
        'const executor = new ProcessExecutor({ executorId, shimPath, pollMs: 50 });',
        'const spec = JSON.parse(specJson);',
        'const exec = await executor.start({ runId: spec.runId, image: "", spec, secretEnv: {}, workDir: dir },',
        '  (lines) => { for (const l of lines) process.stdout.write(JSON.stringify(l) + "\\n"); });',
        'process.stdout.write(JSON.stringify({ handle: exec.handle }) + "\\n");',
        'setInterval(() => {}, 1000);',
      ].join('\n'),
    );
    const runSpec = spec('run-adopt', 'pause.yml', { marker: 'adopt-me', pause_seconds: 2 });
    const relay: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', relayScript, dir, JSON.stringify(runSpec), executorId, shimPath],
      { cwd: repo, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const shippedBeforeCrash: LogLineInput[] = [];
    let handle = '';
    await new Promise<void>((done, fail) => {
      let buffer = '';
      const timer = setTimeout(() => fail(new Error(`relay never got going: ${buffer}`)), 15_000);
      relay.stdout?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        const rows = buffer.split('\n');
        buffer = rows.pop() ?? '';
        for (const row of rows) {
          const parsed = JSON.parse(row) as LogLineInput | { handle: string };
          if ('handle' in parsed) handle = parsed.handle;
          else shippedBeforeCrash.push(parsed);
        }
        if (handle !== '' && shippedBeforeCrash.some((l) => l.text.includes('Pausing for 2 seconds'))) {
          clearTimeout(timer);
          done();
        }
      });
    });
    // The relay ships a batch, then records its offset: crash it after that, as a crash between the two
    // (at-least-once delivery) would ship the batch again.
    const logSize = (): number => statSync(join(dir, 'output.log')).size;
    const shippedOffset = (): number => Number(readFileSync(join(dir, 'output.offset'), 'utf8'));
    for (let i = 0; i < 200 && shippedOffset() !== logSize(); i++)
      await new Promise((r) => setTimeout(r, 10));
    relay.kill('SIGKILL');
    await new Promise((done) => relay.once('exit', done));
    expect(proc(pidOf(handle))?.state).not.toBe('Z');

    const out = collector();
    const adopted = await new ProcessExecutor({ executorId, shimPath, pollMs: 50 }).adopt(
      handle,
      dir,
      out.sink,
    );
    const result = await adopted.done;

    const all = [...shippedBeforeCrash, ...out.lines].map((l) => l.text);
    expect(result).toEqual({ exitCode: 0 });
    expect(adopted.handle).toBe(handle);
    expect(all.filter((t) => t.includes('started, marker adopt-me'))).toHaveLength(1);
    expect(all.filter((t) => t.includes('Pausing for 2 seconds'))).toHaveLength(1);
    expect(out.texts().join('\n')).toContain('"msg": "finished"');
    expect(out.lines.at(-1)).toEqual({
      stream: 'system',
      text: 'remote-worker: ansible-playbook exited with code 0',
    });
    const logged = readFileSync(join(dir, 'output.log'), 'utf8').split('\n').slice(0, -1);
    expect(all).toEqual(logged);
  });

  it('adopting a task that already finished resolves at once with the code from exit.json', async () => {
    const executorId = `t-${randomUUID()}`;
    const dir = workDir();
    const first = collector();
    const exec = await new ProcessExecutor({ executorId, shimPath, pollMs: 50 }).start(
      { runId: 'run-done', image: '', spec: spec('run-done', 'fail.yml'), secretEnv: {}, workDir: dir },
      first.sink,
    );
    await exec.done;

    const out = collector();
    const adopted = await new ProcessExecutor({ executorId, shimPath }).adopt(exec.handle, dir, out.sink);

    expect(await adopted.done).toEqual({ exitCode: 2 });
    expect(out.lines).toEqual([]);
  });

  it('replays the unshipped tail when adopting a finished task', async () => {
    const dir = workDir();
    writeFileSync(join(dir, 'output.log'), 'one\ntwo\nremote-worker: ansible-playbook exited with code 4\n');
    writeFileSync(join(dir, 'output.offset'), String('one\n'.length));
    writeFileSync(join(dir, 'exit.json'), JSON.stringify({ exitCode: 4, signal: null, endedAt: 'x' }));
    const out = collector();

    const adopted = await new ProcessExecutor({ executorId: `t-${randomUUID()}` }).adopt(
      'process:999999999:1',
      dir,
      out.sink,
    );

    expect(await adopted.done).toEqual({ exitCode: 4 });
    expect(out.lines).toEqual([
      { stream: 'stdout', text: 'two' },
      { stream: 'system', text: 'remote-worker: ansible-playbook exited with code 4' },
    ]);
  });

  it('resume answers nothing for a task file whose shim never spawned, and lost once a spawned one is gone', async () => {
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}`, shimPath, pollMs: 50 });
    const dir = workDir();
    // A relay killed after writing the task file and before its spawn returned: nothing ran, so a start is safe.
    writeFileSync(join(dir, 'task.json'), JSON.stringify(spec('run-unspawned', 'fail.yml')), { mode: 0o600 });
    expect(await executor.resume('run-unspawned', dir, () => {})).toBeUndefined();

    // Once the spawn returned, its handle is beside the task file: a shim gone without an exit record is lost.
    writeFileSync(join(dir, 'task.handle'), 'process:1:1', { mode: 0o600 });
    const resumed = await executor.resume('run-unspawned', dir, () => {});
    expect((await resumed?.done)?.lost).toMatch(/is gone and left no exit record/);
  });

  it('a started task records its handle beside its task file; resumed after its end, it answers its exit record', async () => {
    const executorId = `t-${randomUUID()}`;
    const dir = workDir();
    const exec = await new ProcessExecutor({ executorId, shimPath, pollMs: 50 }).start(
      { runId: 'run-handle', image: '', spec: spec('run-handle', 'fail.yml'), secretEnv: {}, workDir: dir },
      collector().sink,
    );
    expect(readFileSync(join(dir, 'task.handle'), 'utf8')).toBe(exec.handle);
    await exec.done;

    const resumed = await new ProcessExecutor({ executorId, shimPath }).resume('run-handle', dir, () => {});
    expect(await resumed?.done).toEqual({ exitCode: 2 });
  });

  it('reports lost for a dead pid without exit.json, and never takes a recycled pid for the task', async () => {
    const sleeper = spawn('sleep', ['0.1']);
    const pid = sleeper.pid ?? 0;
    const starttime = proc(pid)?.starttime;
    await new Promise((done) => sleeper.once('exit', done));
    const executor = new ProcessExecutor({ executorId: `t-${randomUUID()}` });

    const dead = await executor.adopt(`process:${pid}:${starttime}`, workDir(), () => {});
    const recycled = await executor.adopt(`process:${process.pid}:1`, workDir(), () => {});

    const deadResult: ExecutionResult = await dead.done;
    expect(deadResult.lost).toMatch(/is gone and left no exit record/);
    expect((await recycled.done).lost).toMatch(/is gone/);
    await recycled.kill(10);
    expect(proc(process.pid)).toBeDefined();
  });

  it('reapOrphans kills only its own tasks whose run is not kept', async () => {
    const executorId = `t-${randomUUID()}`;
    const executor = new ProcessExecutor({ executorId, shimPath, pollMs: 50, reapGraceMs: 3000 });
    const out = collector();
    const exec = await executor.start(
      {
        runId: 'run-orphan',
        image: '',
        spec: spec('run-orphan', 'pause.yml'),
        secretEnv: {},
        workDir: workDir(),
      },
      out.sink,
    );
    await out.waitFor(/Pausing for 60 seconds/);
    const marker = `RW_RUN_ID=run-orphan`;

    const byOtherRelay = await new ProcessExecutor({ executorId: `t-${randomUUID()}` }).reapOrphans(
      new Set(),
    );
    const kept = await new ProcessExecutor({ executorId, pollMs: 50 }).reapOrphans(new Set(['run-orphan']));
    const stillRunning = liveWithEnv(`RW_EXECUTOR=${executorId}`).length;
    const reaped = await new ProcessExecutor({ executorId, pollMs: 50 }).reapOrphans(
      new Set(['another-run']),
    );

    expect(byOtherRelay).toEqual([]);
    expect(kept).toEqual([]);
    expect(stillRunning).toBeGreaterThan(0);
    expect(reaped).toEqual(['run-orphan']);
    expect(await exec.done).toEqual({ signal: 'SIGTERM' });
    expect(
      liveWithEnv(`RW_EXECUTOR=${executorId}`).filter((pid) => liveWithEnv(marker).includes(pid)),
    ).toEqual([]);
  });
});
