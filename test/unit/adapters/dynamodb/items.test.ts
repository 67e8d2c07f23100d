import { describe, expect, it } from 'vitest';
import { runItem, runKey, runOf, runTableOf } from '../../../../shared/adapters/dynamodb/items.ts';
import { ValidationError } from '../../../../shared/domain/errors.ts';
import { newRun } from '../../../../shared/domain/run.ts';

const run = newRun(
  { id: '01RUNA', kind: 'vm', targetId: 'vm-1', asset: 'a.yml', requestedBy: 't', timeoutSeconds: 60 },
  '2026-01-01T00:00:00.000Z',
);

describe('run items', () => {
  it('round-trip a run through its item, with the attributes keys and indexes need', () => {
    const item = runItem({ ...run, batchId: 'b1' });

    expect(item).toMatchObject({
      ...runKey(run.id),
      id: { S: run.id },
      list: { S: 'run' },
      state: { S: 'queued' },
      version: { N: String(run.version) },
      batchId: { S: 'b1' },
    });
    expect(runOf(item)).toEqual({ ...run, batchId: 'b1' });
  });

  it('refuse a run too large for one item', () => {
    expect(() => runItem({ ...run, extraVars: { blob: 'x'.repeat(400 * 1024) } })).toThrow(ValidationError);
  });
});

describe('runTableOf', () => {
  it('refuses an empty table name', () => {
    expect(() => runTableOf({ tableName: '' })).toThrow('tableName must not be empty');
  });
});
