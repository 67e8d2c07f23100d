import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Run } from '../../domain/run.ts';
import { advancedRun, advancesBlind, handleOrder, type RunAdvance } from '../../ports/run-store.ts';

/**
 * The attributes behind RunStore.advanceRun on DynamoDB (run-advance.ts). An
 * advance is one UpdateItem, which cannot edit the JSON `body`; so the item
 * carries, beside the body:
 * - `advanceKey` (`<attempt>|<task>`) and `advanceOrder`: written by every
 *   full write of a run that may be advanced without a read
 *   (`advancesBlind`), so the advance's condition can check attempt, task
 *   and order on the item itself; absent on any other run;
 * - `advances`: the advances applied since the body was written, in order,
 *   each the RunAdvance as JSON. Every read replays them over the body
 *   ({@link withAdvances}); the next full write (updateRun's PutItem) folds
 *   them into the body and drops them.
 */
export const ADVANCE_KEY = 'advanceKey';
export const ADVANCE_ORDER = 'advanceOrder';
export const ADVANCES = 'advances';

/** `<attempt>|<task>`: what an advance must match. */
export const advanceKeyOf = (attempt: number, task: string): string => `${attempt}|${task}`;

/** The advance attributes of a run's full item: none for a run that needs a read to move on. */
export function advanceAttributes(run: Run): Record<string, AttributeValue> {
  const handle = run.launch?.handle;
  if (handle === undefined || !advancesBlind(run)) return {};
  const { task, order } = handleOrder(handle);
  return {
    [ADVANCE_KEY]: { S: advanceKeyOf(run.attempt, task) },
    ...(order === undefined ? {} : { [ADVANCE_ORDER]: { N: String(order) } }),
  };
}

/** The advances recorded on an item, oldest first. */
export const advancesOf = (item: Record<string, AttributeValue>): readonly string[] =>
  (item[ADVANCES]?.L ?? []).flatMap((v) => (v.S === undefined ? [] : [v.S]));

/**
 * The run an item holds: its body with the advances written since replayed
 * over it, exactly as RunStore.advanceRun describes (advancedRun).
 *
 * @example
 * withAdvances(JSON.parse(item.body.S), item); // { state: 'running', version: body.version + 1, … }
 */
export function withAdvances(run: Run, item: Record<string, AttributeValue>): Run {
  if (run === null) return run;
  return advancesOf(item).reduce((r, text) => advancedRun(r, JSON.parse(text) as RunAdvance), run);
}
