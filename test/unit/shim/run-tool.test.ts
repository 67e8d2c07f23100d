import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ShimError } from '../../../runners/shim/errors.ts';
import { runTool, type ToolHooks } from '../../../runners/shim/run-tool.ts';
import { LOCALHOST_VARS } from '../../../shared/domain/inventory.ts';
import { compileRedaction, DEFAULT_MASK } from '../../../shared/domain/redaction.ts';
import type { TaskSpec } from '../../../shared/domain/task-spec.ts';

/** One run of the real ansible-playbook against localhost, as the shim makes it. */
const PLAYBOOKS = join(import.meta.dirname, '../../fixtures/playbooks');

let workDir: string;
beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'rw-run-tool-'));
});
afterEach(() => {
  rmSync(workDir, { recursive: true, force: true });
});

const spec = (overrides: Partial<TaskSpec> = {}): TaskSpec => ({
  runId: 'run-1',
  kind: 'cluster_play',
  asset: { kind: 'file', path: join(PLAYBOOKS, 'echo-var.yml') },
  assetType: 'playbook',
  inventory: { all: { hosts: { localhost: { ...LOCALHOST_VARS } } } },
  extraVars: {},
  secretVars: [],
  timeoutSeconds: 60,
  ...overrides,
});
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' };

function hooks(): ToolHooks & { readonly out: string[]; readonly said: string[]; readonly stops: string[] } {
  const out: string[] = [];
  const said: string[] = [];
  const stops: string[] = [];
  return {
    out,
    said,
    stops,
    say: (m) => said.push(m),
    write: (text) => out.push(text),
    signal: new AbortController().signal,
    stop: (signal) => stops.push(signal),
    started: () => {},
  };
}

describe('runTool', () => {
  it('runs the tool, pipes its output through the redactor and answers its exit', async () => {
    const h = hooks();

    const result = await runTool(
      spec({ extraVars: { greeting: 'hello hunter22' } }),
      workDir,
      env,
      compileRedaction(['hunter22']),
      h,
    );

    expect(result).toEqual({ tool: 'ansible-playbook', code: 0, signal: null, timedOut: false });
    expect(h.out.join('')).toContain(`greeting is hello ${DEFAULT_MASK}`);
    expect(h.out.join('')).not.toContain('hunter22');
    expect(h.said[0]).toMatch(/^running ansible-playbook -i /);
  });

  it('asks for a stop when the spec timeout passes and answers timedOut', async () => {
    const h = hooks();
    const running = runTool(
      spec({ asset: { kind: 'file', path: join(PLAYBOOKS, 'pause.yml') }, timeoutSeconds: 1 }),
      workDir,
      env,
      compileRedaction([]),
      {
        ...h,
        // What runShim's stop does, reduced to the group signal.
        started: (child) => {
          h.stops.length = 0;
          setTimeout(() => {
            if (h.stops.includes('SIGTERM') && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
          }, 1500);
        },
      },
    );

    const result = await running;

    expect(h.stops).toEqual(['SIGTERM']);
    expect(h.said).toContain('timed out after 1s; stopping ansible-playbook');
    expect(result).toMatchObject({ timedOut: true });
  });

  it('answers a tool that is not on PATH with exit code 127', async () => {
    const error = await runTool(
      spec(),
      workDir,
      { ...env, PATH: workDir },
      compileRedaction([]),
      hooks(),
    ).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(ShimError);
    expect(error).toMatchObject({ exitCode: 127, message: 'cannot run ansible-playbook: not found on PATH' });
  });
});
