import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { pipeLines } from '../../../runners/shim/lines.ts';
import { createRedactor, DEFAULT_MASK, type Redactor } from '../../../shared/domain/redaction.ts';

describe('pipeLines', () => {
  /** Redacts (upper-cases) the first `good` chunks, then throws with the chunk in its message. */
  function failingAfter(good: number): Redactor {
    let calls = 0;
    return {
      push(chunk) {
        if (++calls > good) throw new Error(`cannot redact ${chunk}`);
        return chunk.toUpperCase();
      },
      flush: () => '',
    };
  }

  async function linesFrom(redactor: Redactor, chunks: readonly string[]): Promise<string[]> {
    const stream = new PassThrough();
    const lines: string[] = [];
    const piped = pipeLines(stream, redactor, (line) => lines.push(line));
    for (const chunk of chunks) stream.write(chunk);
    stream.end();
    await piped.done;
    return lines;
  }

  it('withholds the rest of the stream once the redactor throws, after the part it already redacted', async () => {
    const lines = await linesFrom(failingAfter(1), [
      'first line\nsecond ',
      's3cret-1\nthird\n',
      'more s3cret-2\n',
    ]);

    expect(lines).toEqual(['FIRST LINE', 'SECOND ', 'remote-worker: output withheld: the redactor failed']);
    expect(lines.join('\n')).not.toMatch(/s3cret/i);
  });

  it('withholds when the redactor fails at the end of the stream', async () => {
    const redactor: Redactor = {
      push: (chunk) => chunk,
      flush: () => {
        throw new Error('flush failed');
      },
    };

    expect(await linesFrom(redactor, ['done\ntail'])).toEqual([
      'done',
      'tail',
      'remote-worker: output withheld: the redactor failed',
    ]);
  });

  it('redacts a secret split across chunks and lines', async () => {
    const lines = await linesFrom(createRedactor(['hunter22', 'a\nmulti-line\nvalue']), [
      'pw hun',
      'ter22 ok\nkey a\nmul',
      'ti-line\nvalue end\n',
    ]);

    expect(lines).toEqual([`pw ${DEFAULT_MASK} ok`, `key ${DEFAULT_MASK} end`]);
  });
});
