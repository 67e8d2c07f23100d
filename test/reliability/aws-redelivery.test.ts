import { describe, expect, it } from 'vitest';
import { useMoto } from '../support/moto.ts';
import { awsRedelivery, CRASH_STEPS, taskOf } from './aws-redelivery.ts';

/*
 * CI size of the AWS redelivery suite (the bench runs 1,000:
 * bench/reliability.ts aws). See aws-redelivery.ts for what is real, what is
 * injected and where moto differs from AWS. The seed is in the test name.
 */
const moto = useMoto();
const RUNS = 100;
const SEED = Number(process.env.AWS_REDELIVERY_SEED ?? Date.now() % 1_000_000);

describe('dispatch on moto: every message twice, a crash after each dispatch step', () => {
  it(`${RUNS} runs: one ECS task per run attempt, every run launched with it (seed ${SEED})`, async () => {
    const result = await awsRedelivery(moto(), { runs: RUNS, seed: SEED, containers: 4 });

    // Every step crashed, both ways, more than once: otherwise the suite proved less than it says.
    for (const step of CRASH_STEPS) {
      expect({ step, fired: result.crashes[step].throw + result.crashes[step].exit > 2 }).toEqual({
        step,
        fired: true,
      });
    }
    expect(CRASH_STEPS.some((s) => result.crashes[s].exit > 0)).toBe(true);
    expect(result.coldStarts).toBeGreaterThan(4);
    // Each run was delivered at least twice (the copy), crashed ones more.
    expect(result.deliveries).toBeGreaterThanOrEqual(2 * RUNS);

    // 0 duplicate tasks: exactly one per run attempt, and no task that belongs to none.
    const duplicates = [...result.tasksByStartedBy].filter(([, arns]) => arns.length !== 1);
    expect(duplicates).toEqual([]);
    expect(result.totalTasks).toBe(RUNS);
    // Every run launched once, attempt 1, with the one task its startedBy shows; nothing left to deliver.
    for (const run of result.finalRuns) {
      expect({ id: run.id, state: run.state, attempt: run.attempt }).toEqual({
        id: run.id,
        state: 'launched',
        attempt: 1,
      });
      expect(taskOf(run)).toBe(result.tasksByStartedBy.get(`rw/${run.id}/1`)?.[0]);
    }
    expect(result.leftOnQueue).toBe(0);
  }, 180_000);
});
