import { describe, expect, it } from 'vitest';
import { crashSoak, soakVerdict } from './crash-soak.ts';

/*
 * CI size of the crash soak (the bench runs 2,000: bench/reliability.ts soak).
 * Real local mode process, real SQLite file, real ansible-playbook; kill -9
 * every 3–6 s. The seed varies per run and is printed on failure, so a failure
 * is repeated with SOAK_SEED.
 */
const RUNS = Number(process.env.SOAK_RUNS ?? 100);
const SEED = Number(process.env.SOAK_SEED ?? Date.now() % 100_000);

describe('crash soak (kill -9 of local mode under load)', () => {
  it(`${RUNS} runs through repeated kill -9 and restart: none lost, none executed twice, all terminal (seed ${SEED})`, async () => {
    const result = await crashSoak({
      runs: RUNS,
      killEveryMs: [3000, 6000],
      playSeconds: 1,
      clients: 4,
      relayConcurrency: 6,
      maxKills: 10,
      seed: SEED,
      settleTimeoutMs: 90_000,
    });
    const verdict = soakVerdict(result);

    // The soak proves nothing unless local mode really died under it, more than once.
    expect(result.kills).toBeGreaterThanOrEqual(3);
    expect(verdict, `seed ${SEED}; runs that did not succeed:\n${result.unhappy.join('\n')}`).toEqual({
      notAccepted: 0,
      lost: 0,
      executedTwice: 0,
      unfinishedPlays: 0,
      notTerminal: 0,
      notSucceeded: 0,
      badAnswers: 0,
      splitKeys: 0,
      extraRuns: 0,
    });
  }, 240_000);
});
