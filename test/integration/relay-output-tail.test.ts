import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OUTPUT_LOG, OutputTail } from '../../shared/adapters/relay/output-tail.ts';
import type { LogLineInput } from '../../shared/ports/log-store.ts';

/** The tail on a real work dir: output.log appended to as a task would, the offset file read back. */
let workDir: string;
beforeEach(() => {
  workDir = mkdtempSync(join(tmpdir(), 'rw-tail-test-'));
});
afterEach(() => {
  rmSync(workDir, { recursive: true, force: true });
});

const write = (text: string | Buffer): void => appendFileSync(join(workDir, OUTPUT_LOG), text);
const offset = (): string => readFileSync(join(workDir, 'output.offset'), 'utf8');

function collecting(): { lines: LogLineInput[]; sink: (l: readonly LogLineInput[]) => Promise<void> } {
  const lines: LogLineInput[] = [];
  return { lines, sink: async (batch) => void lines.push(...batch) };
}

describe('OutputTail', () => {
  it("ships whole lines, the shim's own as system, and keeps a partial line until it ends or the task does", async () => {
    const { lines, sink } = collecting();
    const tail = new OutputTail(workDir, sink);
    write('TASK [x]\r\nremote-worker: running ansible-playbook\npart');

    tail.drain(false);
    await tail.settled();

    expect(lines).toEqual([
      { stream: 'stdout', text: 'TASK [x]' },
      { stream: 'system', text: 'remote-worker: running ansible-playbook' },
    ]);
    expect(offset()).toBe(String('TASK [x]\r\nremote-worker: running ansible-playbook\n'.length));

    tail.drain(true);
    await tail.settled();

    expect(lines.at(-1)).toEqual({ stream: 'stdout', text: 'part' });
  });

  it('resumes after a restart where the last tail stopped, shipping nothing twice', async () => {
    const first = collecting();
    write('one\ntwo\n');
    const tail = new OutputTail(workDir, first.sink);
    tail.drain(false);
    await tail.settled();
    write('three\n');

    const second = collecting();
    const resumed = new OutputTail(workDir, second.sink);
    resumed.drain(true);
    await resumed.settled();

    expect(first.lines.map((l) => l.text)).toEqual(['one', 'two']);
    expect(second.lines.map((l) => l.text)).toEqual(['three']);
  });

  it('keeps the offset when the sink fails, so the next tail ships the lines again', async () => {
    write('lost once\n');
    const failing = new OutputTail(workDir, () => Promise.reject(new Error('store down')));
    failing.drain(false);
    await failing.settled();

    const { lines, sink } = collecting();
    const again = new OutputTail(workDir, sink);
    again.drain(true);
    await again.settled();

    expect(lines.map((l) => l.text)).toEqual(['lost once']);
  });

  it('ships output that never ends its line in 1 MiB pieces', async () => {
    const { lines, sink } = collecting();
    write('x'.repeat(1024 * 1024 + 10));
    const tail = new OutputTail(workDir, sink);

    tail.drain(true);
    await tail.settled();

    expect(lines.map((l) => l.text.length)).toEqual([1024 * 1024, 10]);
  });

  it('ships nothing while there is no output file yet', async () => {
    const { lines, sink } = collecting();
    const tail = new OutputTail(workDir, sink);

    tail.drain(true);
    await tail.settled();

    expect(lines).toEqual([]);
  });
});
