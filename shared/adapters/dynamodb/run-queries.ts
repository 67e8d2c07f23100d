import { RUN_STATES, type Run, type RunState, TERMINAL_STATES } from '../../domain/run.ts';
import { LIST_VALUE, RUN_INDEX } from '../../domain/run-table.ts';
import type { RunQuery } from '../../ports/run-store.ts';
import { type Item, queryAll, type RunTable, runOf, S } from './items.ts';

/*
 * The run list's reads: which index answers a query, and the reconciler's
 * oldest non-terminal runs. Index reads are eventually consistent.
 */

const TERMINAL: readonly string[] = TERMINAL_STATES;
const ACTIVE_STATES: readonly RunState[] = RUN_STATES.filter((s) => !TERMINAL.includes(s));

/**
 * Up to `limit + 1` runs of a list query, newest first, after the run id
 * `after`: by batch (state as a filter), by state, or every run.
 */
export function queryRunList(
  t: RunTable,
  query: RunQuery,
  after: string | undefined,
  limit: number,
): Promise<Item[]> {
  let index: string;
  let partition: { name: string; value: string };
  let filter: { name: string; value: string } | undefined;
  if (query.batchId !== undefined) {
    index = RUN_INDEX.byBatch;
    partition = { name: 'batchId', value: query.batchId };
    if (query.state !== undefined) filter = { name: 'state', value: query.state };
  } else if (query.state !== undefined) {
    index = RUN_INDEX.byState;
    partition = { name: 'state', value: query.state };
  } else {
    index = RUN_INDEX.byId;
    partition = { name: 'list', value: LIST_VALUE };
  }

  // One extra item tells whether another page exists. The cursor is the last run id returned, which
  // `id < :after` resumes from: a filtered page stops in the middle of a DynamoDB page, where no
  // LastEvaluatedKey exists to hand out.
  return queryAll(
    t.client,
    {
      TableName: t.table,
      IndexName: index,
      KeyConditionExpression: `#p = :p${after === undefined ? '' : ' AND #id < :after'}`,
      ...(filter === undefined ? {} : { FilterExpression: '#f = :f' }),
      ExpressionAttributeNames: {
        '#p': partition.name,
        ...(after === undefined ? {} : { '#id': 'id' }),
        ...(filter === undefined ? {} : { '#f': filter.name }),
      },
      ExpressionAttributeValues: {
        ':p': S(partition.value),
        ...(after === undefined ? {} : { ':after': S(after) }),
        ...(filter === undefined ? {} : { ':f': S(filter.value) }),
      },
      ScanIndexForward: false,
      // A filter is applied after Limit, so read further ahead per request when one is set.
      Limit: filter === undefined ? limit + 1 : Math.min(1000, (limit + 1) * 4),
    },
    limit + 1,
  );
}

/** The oldest `limit` runs not yet in a terminal state. */
export async function oldestActiveRuns(t: RunTable, limit: number): Promise<readonly Run[]> {
  // Each state's oldest `limit` runs hold the overall oldest `limit`.
  const perState = await Promise.all(
    ACTIVE_STATES.map((state) =>
      queryAll(
        t.client,
        {
          TableName: t.table,
          IndexName: RUN_INDEX.byState,
          KeyConditionExpression: '#state = :state',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':state': S(state) },
          ScanIndexForward: true,
          Limit: Math.min(limit, 1000),
        },
        limit,
      ),
    ),
  );
  return perState
    .flat()
    .map(runOf)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .slice(0, limit);
}
