import { describe, expect, it } from 'vitest';
import { ApiError, type ApiResponse, type Client, ConnectionError } from '../../../bin/cli/api-client.ts';
import { EXIT, exitCodeForState, exitCodeForStatus } from '../../../bin/cli/exit-codes.ts';
import { printLogs } from '../../../bin/cli/follow.ts';
import type { Io } from '../../../bin/cli/io.ts';
import { describeProblem } from '../../../bin/cli/output.ts';
import { formatCounts, watchBatch } from '../../../bin/cli/progress.ts';

/** A client that answers each request with the next scripted value (or throws it). */
class ScriptedClient implements Client {
  readonly paths: string[] = [];
  constructor(private readonly answers: unknown[]) {}
  async request<T>(_method: string, path: string): Promise<ApiResponse<T>> {
    this.paths.push(path);
    const next = this.answers.shift();
    if (next instanceof Error) throw next;
    if (next === undefined) throw new Error(`no scripted answer for ${path}`);
    return { status: 200, body: next as T };
  }
}

const captureIo = (isTTY = false) => {
  const out: string[] = [];
  const sleeps: number[] = [];
  const io: Io = {
    stdout: { write: (t: string) => out.push(t), isTTY },
    stderr: { write: (t: string) => out.push(`ERR:${t}`) },
    env: {},
    readFile: async () => Buffer.alloc(0),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  };
  return { io, out, sleeps };
};

const page = (lines: string[], nextCursor: string, state = 'running', complete = false) => ({
  runId: 'r1',
  state,
  complete,
  nextCursor,
  lines: lines.map((text, i) => ({ seq: i, at: '', stream: 'stdout', text })),
});

describe('printLogs', () => {
  it('follows with the cursor until the run is complete and a page comes back empty', async () => {
    const client = new ScriptedClient([
      page(['PLAY [all]'], 'c1'),
      page([], 'c1'),
      page(['ok: [localhost]'], 'c2', 'succeeded', true),
      page([], 'c2', 'succeeded', true),
    ]);
    const { io, out, sleeps } = captureIo();

    const state = await printLogs(client, 'r1', io, {
      follow: true,
      intervalMs: 250,
      out: (t) => io.stdout.write(t),
      err: (t) => io.stderr.write(t),
    });

    expect(state).toBe('succeeded');
    expect(out).toEqual(['PLAY [all]\n', 'ok: [localhost]\n']);
    expect(client.paths).toEqual([
      '/runs/r1/logs',
      '/runs/r1/logs?cursor=c1',
      '/runs/r1/logs?cursor=c1',
      '/runs/r1/logs?cursor=c2',
    ]);
    expect(sleeps).toEqual([250]);
  });

  it('rides out a few failed polls while following', async () => {
    const client = new ScriptedClient([
      new ConnectionError('refused'),
      new ApiError(503, { title: 'unavailable' }),
      page([], 'c0', 'failed', true),
    ]);
    const { io } = captureIo();

    const state = await printLogs(client, 'r1', io, {
      follow: true,
      intervalMs: 10,
      out: () => {},
      err: () => {},
    });

    expect(state).toBe('failed');
  });

  it('gives up on an error the API means (404) at once', async () => {
    const client = new ScriptedClient([new ApiError(404, { title: 'Not found' })]);
    const { io } = captureIo();

    await expect(
      printLogs(client, 'r1', io, { follow: true, intervalMs: 10, out: () => {}, err: () => {} }),
    ).rejects.toThrow(ApiError);
  });
});

describe('watchBatch', () => {
  const rollup = (counts: Record<string, number>, complete: boolean) => ({
    batchId: 'b1',
    total: 3,
    counts,
    complete,
    failed: [],
    runs: [],
  });

  it('redraws one line in place on a terminal', async () => {
    const client = new ScriptedClient([
      rollup({ queued: 3 }, false),
      rollup({ running: 1, succeeded: 2 }, false),
      rollup({ succeeded: 3 }, true),
    ]);
    const { io, out } = captureIo(true);

    await watchBatch(client, 'b1', io, { intervalMs: 1, tty: true, write: (t) => io.stdout.write(t) });

    expect(out).toEqual([
      '\r\u001b[2Kbatch b1: 3 queued (3 total)',
      '\r\u001b[2Kbatch b1: 1 running · 2 succeeded (3 total)',
      '\r\u001b[2Kbatch b1: 3 succeeded (3 total)\n',
    ]);
  });

  it('prints a plain line per change elsewhere', async () => {
    const client = new ScriptedClient([
      rollup({ queued: 3 }, false),
      rollup({ queued: 3 }, false),
      rollup({ succeeded: 3 }, true),
    ]);
    const { io, out } = captureIo(false);

    await watchBatch(client, 'b1', io, { intervalMs: 1, tty: false, write: (t) => io.stdout.write(t) });

    expect(out).toEqual(['batch b1: 3 queued (3 total)\n', 'batch b1: 3 succeeded (3 total)\n']);
  });

  it('shows states in lifecycle order', () => {
    expect(formatCounts({ total: 4, counts: { failed: 1, queued: 2, succeeded: 1 } as never })).toBe(
      '2 queued · 1 succeeded · 1 failed (4 total)',
    );
  });
});

describe('exit codes and problems', () => {
  it.each([
    ['succeeded', 0],
    ['failed', 1],
    ['refused', 2],
    ['cancelled', 3],
    ['timed_out', 4],
  ])('exits %s with %i', (state, code) => {
    expect(exitCodeForState(state)).toBe(code);
  });

  it.each([
    [400, EXIT.requestRefused],
    [404, EXIT.requestRefused],
    [422, EXIT.requestRefused],
    [401, EXIT.unauthorized],
    [503, EXIT.unavailable],
  ])('maps HTTP %i to %i', (status, code) => {
    expect(exitCodeForStatus(status)).toBe(code);
  });

  it('prints the title, the detail and every offending target', () => {
    const text = describeProblem(422, {
      type: 'https://remote-worker.dev/problems/selection-refused',
      title: 'The target selection is refused',
      detail: '2 of 3 targets cannot be selected for a vm run',
      targets: [
        { targetId: 'desk-1', reason: 'A virtual desktop is a seat' },
        { targetId: 'ghost', reason: 'No target with id ghost is registered' },
      ],
    });

    expect(text).toBe(
      [
        'error: The target selection is refused (HTTP 422)',
        '  2 of 3 targets cannot be selected for a vm run',
        '  - desk-1: A virtual desktop is a seat',
        '  - ghost: No target with id ghost is registered',
        '  (https://remote-worker.dev/problems/selection-refused)',
        '',
      ].join('\n'),
    );
  });
});
