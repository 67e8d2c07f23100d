import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOCALHOST_TARGET, type LocalProcess, newDataDir, startLocal } from '../e2e/harness.ts';
import { mulberry32 } from './random.ts';

/*
 * The crash soak, shared by test/reliability/crash-soak.test.ts (CI size) and
 * bench/reliability.ts (large size). It asserts nothing: it returns what it
 * saw, and the caller decides what must hold.
 *
 * Local mode runs as its own process (`bin/local.ts`, as `npm start` does) with
 * the process executor and real ansible-playbook. Clients submit runs whose
 * play appends "<token> start" / "<token> end" to one marker file
 * (test/fixtures/playbooks/soak-marker.yml) while a killer sends SIGKILL to
 * local mode every few seconds and starts it again on the same data
 * directory. A client whose request died with the process retries it against
 * the next incarnation with the same Idempotency-Key, as a careful client
 * would, so "accepted" never depends on when the kill landed.
 */

export interface SoakOptions {
  readonly runs: number;
  /** Milliseconds between a start (or restart) being ready and the next kill: [min, max). */
  readonly killEveryMs: readonly [number, number];
  /** Stop killing after this many kills (bounds the CI runtime); the soak still waits for every run. */
  readonly maxKills: number;
  /** How long each play sleeps between its start and end marks, so kills land mid-play too. */
  readonly playSeconds: number;
  /** Clients submitting at once. */
  readonly clients: number;
  /** RELAY_CONCURRENCY of local mode. */
  readonly relayConcurrency: number;
  readonly seed: number;
  /** After the last kill, how long every run has to end. */
  readonly settleTimeoutMs: number;
  readonly progress?: (line: string) => void;
}

export interface SoakResult {
  readonly planned: number;
  readonly kills: number;
  /** Wall-clock ms from kill to the next incarnation listening. */
  readonly restartMs: readonly number[];
  readonly durationMs: number;
  /** Submits that had to be sent again because local mode died under them. */
  readonly resubmits: number;
  /** Answers that were neither 202 nor a dropped connection: must be none. */
  readonly badAnswers: readonly string[];
  /** Idempotency keys answered with more than one run id. */
  readonly splitKeys: readonly string[];
  /** Runs GET /runs lists: one per key when nothing was created twice. */
  readonly listed: number;
  /** Every run that did not succeed, as `<token> <id> <state>: <reason>` (the failure message). */
  readonly unhappy: readonly string[];
  /** Final state per run id. */
  readonly states: ReadonlyMap<string, string>;
  /** Per token: how many start and end lines the marker file holds. */
  readonly marks: ReadonlyMap<string, { readonly start: number; readonly end: number }>;
  /** token → run id for every planned run that was accepted. */
  readonly runIdOf: ReadonlyMap<string, string>;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'refused']);

/** A dropped connection or a refused one: local mode was killed under the request. */
const isConnectionError = (error: unknown) =>
  error instanceof TypeError || (error instanceof Error && /ECONNRE|socket|terminated/i.test(error.message));

export async function crashSoak(options: SoakOptions): Promise<SoakResult> {
  const random = mulberry32(options.seed);
  const dataDir = newDataDir();
  const scratch = mkdtempSync(join(tmpdir(), 'rw-soak-'));
  const markerFile = join(scratch, 'marks');
  const env = {
    // The fixture play lives beside the other test playbooks.
    LOCAL_STORAGE_PATH: 'test/fixtures/playbooks',
    RELAY_CONCURRENCY: String(options.relayConcurrency),
    LOG_LEVEL: 'ERROR',
  };
  const say = options.progress ?? (() => {});
  const started = performance.now();

  let current: Promise<LocalProcess> = startLocal(dataDir, env);
  let kills = 0;
  const restartMs: number[] = [];

  /** One request, sent again to each new incarnation until one answers. */
  const request = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    for (let tries = 0; ; tries++) {
      const local = await current;
      try {
        const res = await fetch(local.url + path, {
          method,
          headers: {
            authorization: `Bearer ${local.token}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: AbortSignal.timeout(30_000),
        });
        const text = await res.text();
        return { status: res.status, body: text === '' ? undefined : JSON.parse(text), tries };
      } catch (error) {
        if (!isConnectionError(error) || tries > 1000) throw error;
        // Give the killer time to replace `current`, then try the new incarnation.
        await sleep(50);
      }
    }
  };

  try {
    await request('PUT', '/targets/localhost', LOCALHOST_TARGET);

    // The killer: every few seconds after each start, kill -9 and start again on the same data dir.
    const stopKilling = new AbortController();
    const killer = (async () => {
      for (;;) {
        const [min, max] = options.killEveryMs;
        const waited = await sleep(min + random() * (max - min), true, { signal: stopKilling.signal }).catch(
          () => false,
        );
        if (!waited || kills >= options.maxKills) return;
        const victim = await current;
        const t0 = performance.now();
        current = victim.kill9().then(() => startLocal(dataDir, env));
        await current;
        kills += 1;
        restartMs.push(performance.now() - t0);
      }
    })();

    const tokens = Array.from({ length: options.runs }, (_, i) => `t${options.seed}-${i}`);
    const idsByKey = new Map<string, Set<string>>();
    const badAnswers: string[] = [];
    let resubmits = 0;
    /** POST /runs for a token; a try that died with local mode is sent again with the same key. */
    const submit = async (token: string) => {
      const res = await request(
        'POST',
        '/runs',
        {
          kind: 'vm',
          targetId: 'localhost',
          asset: 'soak-marker.yml',
          extraVars: { marker: markerFile, token, seconds: options.playSeconds },
        },
        { 'idempotency-key': `soak-${token}` },
      );
      resubmits += res.tries;
      if (res.status !== 202) {
        badAnswers.push(`${token}: ${res.status} ${JSON.stringify(res.body)}`);
        return;
      }
      const ids = idsByKey.get(token) ?? new Set<string>();
      ids.add(res.body.id);
      idsByKey.set(token, ids);
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: options.clients }, async () => {
        while (next < tokens.length) {
          await submit(tokens[next++] as string);
          if (next % 50 === 0) say(`submitted ${next}/${tokens.length}, ${kills} kills`);
        }
      }),
    );
    // Every key once more, across the crashes: a replay must name the same run, never make a second one.
    for (const token of tokens) await submit(token);

    const runIdOf = new Map<string, string>();
    for (const [token, ids] of idsByKey) runIdOf.set(token, [...ids][0] as string);
    const readStates = async () => {
      const states = new Map<string, string>();
      for (const [, id] of runIdOf) states.set(id, (await request('GET', `/runs/${id}`)).body?.state);
      return states;
    };

    // Keep killing while runs are still in flight, so crashes land during dispatch and plays, then stop.
    for (;;) {
      const states = await readStates();
      const open = [...states.values()].filter((s) => !TERMINAL.has(s)).length;
      say(`${open} runs not yet terminal, ${kills} kills`);
      if (open <= Math.max(1, Math.floor(options.runs / 20)) || kills >= options.maxKills) break;
      await sleep(1000);
    }
    stopKilling.abort();
    await killer;

    let states = await readStates();
    const settleUntil = Date.now() + options.settleTimeoutMs;
    while ([...states.values()].some((s) => !TERMINAL.has(s)) && Date.now() < settleUntil) {
      await sleep(500);
      states = await readStates();
    }

    const unhappy: string[] = [];
    for (const [token, id] of runIdOf) {
      if (states.get(id) === 'succeeded') continue;
      const run = (await request('GET', `/runs/${id}`)).body;
      unhappy.push(`${token} ${id} ${run?.state}: ${run?.reason ?? '(no reason)'}`);
    }

    let listed = 0;
    let cursor: string | undefined;
    do {
      const page = await request(
        'GET',
        `/runs?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      listed += page.body.runs.length;
      cursor = page.body.nextCursor;
    } while (cursor !== undefined);

    const marks = new Map<string, { start: number; end: number }>(
      tokens.map((t) => [t, { start: 0, end: 0 }]),
    );
    let text = '';
    try {
      text = readFileSync(markerFile, 'utf8');
    } catch {
      // No play ran at all: every run counts as lost below.
    }
    for (const line of text.split('\n')) {
      const [token = '', what] = line.split(' ');
      const m = marks.get(token);
      if (m !== undefined && (what === 'start' || what === 'end')) m[what] += 1;
    }

    return {
      planned: options.runs,
      kills,
      restartMs,
      durationMs: performance.now() - started,
      resubmits,
      badAnswers,
      splitKeys: [...idsByKey].filter(([, ids]) => ids.size > 1).map(([key]) => key),
      listed,
      unhappy,
      states,
      marks,
      runIdOf,
    };
  } finally {
    await (await current.catch(() => undefined))?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The soak's verdict in counts: what must all be zero (or equal) for the service to have held. */
export function soakVerdict(r: SoakResult) {
  const tokens = [...r.marks.keys()];
  return {
    notAccepted: tokens.filter((t) => !r.runIdOf.has(t)).length,
    lost: tokens.filter((t) => (r.marks.get(t)?.start ?? 0) === 0).length,
    executedTwice: tokens.filter((t) => (r.marks.get(t)?.start ?? 0) > 1).length,
    unfinishedPlays: tokens.filter((t) => (r.marks.get(t)?.end ?? 0) !== 1).length,
    notTerminal: [...r.states.values()].filter((s) => !TERMINAL.has(s)).length,
    notSucceeded: [...r.states.values()].filter((s) => s !== 'succeeded').length,
    badAnswers: r.badAnswers.length,
    splitKeys: r.splitKeys.length,
    extraRuns: r.listed - r.runIdOf.size,
  };
}
