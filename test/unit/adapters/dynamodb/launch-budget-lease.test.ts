import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LeasedTakes, type TakeUpTo } from '../../../../shared/adapters/dynamodb/launch-budget-lease.ts';
import type { Budget } from '../../../../shared/domain/launch-budget.ts';
import { leasing, takeManyFromBudget } from '../../../../shared/domain/launch-budget-lease.ts';

const ECS: Budget = { perSecond: 20, burst: 100 };

/**
 * The shared bucket as one store every "container" writes to (what the
 * runs-table item is), counting writes. Refusals answer when the next token
 * is due; the waiting line is DynamoLaunchBudgets' own and not modelled here.
 */
function sharedBucket() {
  const tats = new Map<string, number>();
  let writes = 0;
  const takeUpTo: TakeUpTo = async (key, bucket, want, nowMs) => {
    writes += 1;
    const d = takeManyFromBudget(tats.get(key), nowMs, bucket, want);
    if (!d.ok) return { granted: 0, retryAfterMs: d.retryAfterMs };
    tats.set(key, d.tat);
    return { granted: d.granted };
  };
  return { takeUpTo, writes: () => writes };
}

/** The most launches in any window [t_i, t_j] must stay within burst + rate·(t_j − t_i). */
function worstExcess(times: readonly number[], b: Budget): number {
  const sorted = [...times].sort((x, y) => x - y);
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i; j < sorted.length; j++) {
      const allowed = b.burst + (b.perSecond * ((sorted[j] ?? 0) - (sorted[i] ?? 0))) / 1000;
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}

describe('leasing', () => {
  it('leases a tenth of the burst, for the time it takes to refill, from a bucket lowered by as much', () => {
    expect(leasing(ECS)).toEqual({ size: 10, lifetimeMs: 500, bucket: { perSecond: 20, burst: 90 } });
    // Small bursts get no leases: one write per launch, the bucket as configured.
    expect(leasing({ perSecond: 5, burst: 10 })).toEqual({
      size: 1,
      lifetimeMs: 0,
      bucket: { perSecond: 5, burst: 10 },
    });
  });

  it('takes as many tokens at once as the bucket holds, and none from an empty one', () => {
    const b = { perSecond: 10, burst: 5 };
    expect(takeManyFromBudget(undefined, 0, b, 3)).toEqual({ ok: true, granted: 3, tat: 300 });
    expect(takeManyFromBudget(300, 0, b, 9)).toEqual({ ok: true, granted: 2, tat: 500 });
    expect(takeManyFromBudget(500, 0, b, 1)).toEqual({ ok: false, retryAfterMs: 100 });
  });
});

describe('LeasedTakes', () => {
  it('serves a batch of N concurrent launches in one container with at most ⌈N/k⌉ writes', async () => {
    const bucket = sharedBucket();
    const container = new LeasedTakes(bucket.takeUpTo);
    const n = 80;
    const takes = await Promise.all(Array.from({ length: n }, () => container.take('ecs#a', ECS, 1_000)));
    expect(takes.every((t) => t.granted)).toBe(true);
    expect(bucket.writes()).toBeLessThanOrEqual(Math.ceil(n / leasing(ECS).size));
  });

  it('serves a steady stream at the budget’s rate with one write per lease once it has warmed up', async () => {
    const bucket = sharedBucket();
    const container = new LeasedTakes(bucket.takeUpTo);
    const n = 400;
    let granted = 0;
    for (let i = 0; i < n; i++) if ((await container.take('ecs#a', ECS, i * 50)).granted) granted += 1;
    const k = leasing(ECS).size;
    expect(granted).toBe(n);
    // Warm-up: the lease grows with what this container used lately (1, 2, 4, 8, then k).
    expect(bucket.writes()).toBeLessThanOrEqual(Math.ceil(n / k) + Math.ceil(Math.log2(k)) + 1);
  });

  it('keeps the shared rate within the budget across several containers (simulated clock)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 6 }),
        fc.array(
          fc.record({
            gap: fc.integer({ min: 0, max: 40 }),
            who: fc.nat(),
            many: fc.integer({ min: 1, max: 12 }),
          }),
          {
            minLength: 20,
            maxLength: 120,
          },
        ),
        async (count, steps) => {
          const bucket = sharedBucket();
          const containers = Array.from({ length: count }, () => new LeasedTakes(bucket.takeUpTo));
          const launches: number[] = [];
          let now = 5_000;
          for (const step of steps) {
            now += step.gap;
            const c = containers[step.who % count];
            if (c === undefined) continue;
            const at = now;
            const got = await Promise.all(Array.from({ length: step.many }, () => c.take('ecs#a', ECS, at)));
            for (const g of got) if (g.granted) launches.push(at);
          }
          expect(worstExcess(launches, ECS)).toBeLessThanOrEqual(1e-9);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('holds the budget when a lease is spent late, just as another container drains the bucket', async () => {
    const bucket = sharedBucket();
    const [a, b] = [new LeasedTakes(bucket.takeUpTo), new LeasedTakes(bucket.takeUpTo)];
    const launches: number[] = [];
    const burstAt = async (c: LeasedTakes, n: number, at: number) => {
      const got = await Promise.all(Array.from({ length: n }, () => c.take('ecs#a', ECS, at)));
      for (const g of got) if (g.granted) launches.push(at);
    };
    await burstAt(a, 9, 0);
    // A lease of 10 for one launch now: 9 left, usable until 600.
    await burstAt(a, 1, 100);
    // A spends them at the last moment, while B takes all the bucket has at that instant.
    await burstAt(a, 9, 599);
    await burstAt(b, 200, 599);
    // Without the lowered bucket this instant would see 101 launches from a bucket of 100.
    expect(worstExcess(launches, ECS)).toBeLessThanOrEqual(1e-9);
  });

  it('lets leased tokens expire: a container does not hoard what it did not use', async () => {
    const bucket = sharedBucket();
    const a = new LeasedTakes(bucket.takeUpTo);
    await Promise.all(Array.from({ length: 5 }, () => a.take('ecs#a', ECS, 0)));
    // Demand of 5 lately: this take's write leases 6, 5 of them left for later.
    await a.take('ecs#a', ECS, 100);
    const writes = bucket.writes();
    expect((await a.take('ecs#a', ECS, 110)).granted).toBe(true);
    expect(bucket.writes()).toBe(writes);
    // Past the lifetime the 4 left are gone: a new write.
    await a.take('ecs#a', ECS, 100 + leasing(ECS).lifetimeMs + 1);
    expect(bucket.writes()).toBe(writes + 1);
  });
});
