import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LIST_VALUE, RUN_INDEX, runTableDefinition } from '../../../shared/domain/run-table.ts';

describe('runTableDefinition', () => {
  it('keys the table by pk/sk and sorts every index by the run id', () => {
    const def = runTableDefinition();

    expect(def.keySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    expect(
      def.globalSecondaryIndexes.map((i) => [i.IndexName, i.KeySchema.map((k) => k.AttributeName)]),
    ).toEqual([
      [RUN_INDEX.byId, ['list', 'id']],
      [RUN_INDEX.byState, ['state', 'id']],
      [RUN_INDEX.byBatch, ['batchId', 'id']],
    ]);
    expect(def.timeToLiveAttribute).toBe('expiresAt');
    expect(LIST_VALUE).toBe('run');
  });

  it('defines every key attribute it names, as a string', () => {
    const def = runTableDefinition();
    const defined = new Set(def.attributeDefinitions.map((a) => a.AttributeName));
    const named = [...def.keySchema, ...def.globalSecondaryIndexes.flatMap((i) => i.KeySchema)].map(
      (k) => k.AttributeName,
    );

    expect(named.filter((n) => !defined.has(n))).toEqual([]);
    expect(new Set(def.attributeDefinitions.map((a) => a.AttributeType))).toEqual(new Set(['S']));
  });

  it('imports nothing, so the CDK app loads no SDK or adapter code with it', () => {
    const source = readFileSync(new URL('../../../shared/domain/run-table.ts', import.meta.url), 'utf8');

    expect(source).not.toMatch(/^import /m);
  });
});
