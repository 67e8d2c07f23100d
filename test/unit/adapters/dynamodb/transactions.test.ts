import { describe, expect, it } from 'vitest';
import { chunkRuns } from '../../../../shared/adapters/dynamodb/transactions.ts';
import { newRun, type Run } from '../../../../shared/domain/run.ts';

const aRun = (i: number, extraVars: Record<string, unknown> = {}): Run =>
  newRun(
    {
      id: `01RUN${String(i).padStart(21, '0')}`,
      kind: 'vm',
      targetId: 'vm-1',
      asset: 'hello/site.yml',
      extraVars,
      requestedBy: 't',
      timeoutSeconds: 60,
    },
    '2026-01-01T00:00:00.000Z',
  );

describe('chunkRuns', () => {
  it('keeps a batch in one transaction up to 100 runs, in order', () => {
    const runs = Array.from({ length: 100 }, (_, i) => aRun(i));

    expect(chunkRuns(runs)).toEqual([runs]);
  });

  it('starts a new transaction after 100 runs or before 3.5 MB', () => {
    const many = Array.from({ length: 250 }, (_, i) => aRun(i));
    expect(chunkRuns(many).map((c) => c.length)).toEqual([100, 100, 50]);

    const big = Array.from({ length: 20 }, (_, i) => aRun(i, { blob: 'x'.repeat(300_000) }));
    const chunks = chunkRuns(big);
    expect(chunks.map((c) => c.length)).toEqual([11, 9]);
    expect(chunks.flat()).toEqual(big);
  });
});
