import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidTransitionError } from '../../../shared/domain/errors.ts';
import {
  amend,
  canTransition,
  deadlineOf,
  isTerminal,
  newRun,
  RUN_STATES,
  type Run,
  type RunState,
  requestCancel,
  TERMINAL_STATES,
  transition,
} from '../../../shared/domain/run.ts';

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:01:00.000Z';
const T2 = '2025-01-01T00:02:00.000Z';

/**
 * The state machine as DESIGN.md states it, written out independently of run.ts and as rules rather than
 * its table: each live state's own next steps; any live state may also fail, be cancelled or time out; a
 * terminal state has no way out.
 */
const STEPS: Partial<Record<RunState, readonly RunState[]>> = {
  queued: ['dispatching', 'refused'],
  dispatching: ['queued', 'launched', 'refused'],
  launched: ['running', 'succeeded'],
  running: ['succeeded'],
};
const ENDINGS: readonly RunState[] = ['failed', 'cancelled', 'timed_out'];
const ALLOWED = Object.fromEntries(
  RUN_STATES.map((s): [RunState, readonly RunState[]] => {
    const steps = STEPS[s];
    return [s, steps === undefined ? [] : [...steps, ...ENDINGS]];
  }),
) as Record<RunState, readonly RunState[]>;

/** A shortest legal path from queued to each state. */
const PATH: Record<RunState, readonly RunState[]> = {
  queued: [],
  dispatching: ['dispatching'],
  launched: ['dispatching', 'launched'],
  running: ['dispatching', 'launched', 'running'],
  succeeded: ['dispatching', 'launched', 'running', 'succeeded'],
  failed: ['dispatching', 'failed'],
  cancelled: ['cancelled'],
  timed_out: ['dispatching', 'launched', 'timed_out'],
  refused: ['dispatching', 'refused'],
};

const fresh = (): Run =>
  newRun(
    {
      id: 'run-1',
      kind: 'vm',
      targetId: 'vm-1',
      asset: 'hello/site.yml',
      requestedBy: 'alice',
      timeoutSeconds: 600,
    },
    T0,
  );

const runIn = (state: RunState): Run => PATH[state].reduce((run, to) => transition(run, to, T1), fresh());

const PAIRS = RUN_STATES.flatMap((from) => RUN_STATES.map((to) => [from, to] as const));
const NON_TERMINAL = RUN_STATES.filter((s) => !isTerminal(s));

describe('run state machine', () => {
  describe('newRun', () => {
    it('starts queued at version 1 with one history entry and empty vars and secrets', () => {
      const run = fresh();

      expect(run).toMatchObject({
        state: 'queued',
        version: 1,
        attempt: 0,
        cancelRequested: false,
        extraVars: {},
        secrets: [],
        createdAt: T0,
        updatedAt: T0,
        history: [{ state: 'queued', at: T0 }],
      });
    });
  });

  describe('isTerminal', () => {
    it.each(RUN_STATES)('classifies %s', (state) => {
      const expected = (TERMINAL_STATES as readonly string[]).includes(state);

      expect(isTerminal(state)).toBe(expected);
    });

    it('treats exactly the five end states as terminal', () => {
      expect([...TERMINAL_STATES].sort()).toEqual([
        'cancelled',
        'failed',
        'refused',
        'succeeded',
        'timed_out',
      ]);
    });
  });

  describe('transition', () => {
    it.each(PAIRS.filter(([from, to]) => ALLOWED[from].includes(to)))('allows %s → %s', (from, to) => {
      const run = runIn(from);

      const next = transition(run, to, T2);

      expect(canTransition(from, to)).toBe(true);
      expect(next.state).toBe(to);
      expect(next.version).toBe(run.version + 1);
      expect(next.history).toEqual([...run.history, { state: to, at: T2 }]);
      expect(next.updatedAt).toBe(T2);
    });

    it.each(PAIRS.filter(([from, to]) => !ALLOWED[from].includes(to)))('forbids %s → %s', (from, to) => {
      const run = runIn(from);

      const act = () => transition(run, to, T2);

      expect(canTransition(from, to)).toBe(false);
      expect(act).toThrow(InvalidTransitionError);
      expect(act).toThrow(`Run run-1 cannot move from ${from} to ${to}`);
    });

    it('does not mutate the run it is given', () => {
      const run = runIn('dispatching');
      const before = structuredClone(run);

      transition(run, 'launched', T2);

      expect(run).toEqual(before);
    });

    it('applies the patch with the move', () => {
      const run = runIn('dispatching');

      const next = transition(run, 'launched', T2, {
        patch: { launch: { backend: 'ecs', intentAt: T1, handle: 'ecs:c/t' }, attempt: 1 },
      });

      expect(next.launch).toEqual({ backend: 'ecs', intentAt: T1, handle: 'ecs:c/t' });
      expect(next.attempt).toBe(1);
    });

    it.each(TERMINAL_STATES.filter((s) => ALLOWED.running.includes(s)))(
      'records the reason on the run when it ends %s',
      (to) => {
        const next = transition(runIn('running'), to, T2, { reason: 'because' });

        expect(next.reason).toBe('because');
        expect(next.history.at(-1)).toEqual({ state: to, at: T2, reason: 'because' });
      },
    );

    it('records the reason on the run when it goes back to queued', () => {
      const next = transition(runIn('dispatching'), 'queued', T2, { reason: 'launcher throttled' });

      expect(next.reason).toBe('launcher throttled');
    });

    it('keeps the reason only in the history for a non-terminal move', () => {
      const next = transition(runIn('launched'), 'running', T2, { reason: 'task started' });

      expect(next.reason).toBeUndefined();
      expect(next.history.at(-1)).toEqual({ state: 'running', at: T2, reason: 'task started' });
    });
  });

  describe('requestCancel', () => {
    it('cancels a queued run at once', () => {
      const run = fresh();

      const next = requestCancel(run, T1);

      expect(next).toMatchObject({
        state: 'cancelled',
        cancelRequested: true,
        reason: 'Cancelled before it started',
        version: run.version + 1,
      });
    });

    it.each(['dispatching', 'launched', 'running'] as const)('only flags a %s run', (state) => {
      const run = runIn(state);

      const next = requestCancel(run, T2);

      expect(next.state).toBe(state);
      expect(next.cancelRequested).toBe(true);
      expect(next.version).toBe(run.version + 1);
      expect(next.history).toEqual(run.history);
    });

    it.each(TERMINAL_STATES)('leaves a %s run unchanged', (state) => {
      const run = runIn(state);

      expect(requestCancel(run, T2)).toBe(run);
    });

    it('does not bump the version twice for a repeated request', () => {
      const flagged = requestCancel(runIn('running'), T1);

      expect(requestCancel(flagged, T2)).toBe(flagged);
    });
  });

  describe('amend', () => {
    it.each(NON_TERMINAL)('changes fields of a %s run without moving it', (state) => {
      const run = runIn(state);

      const next = amend(run, T2, { owner: 'dispatcher#7' });

      expect(next).toMatchObject({ state, owner: 'dispatcher#7', version: run.version + 1, updatedAt: T2 });
      expect(next.history).toEqual(run.history);
    });

    it.each(TERMINAL_STATES)('refuses a %s run', (state) => {
      const run = runIn(state);

      const act = () => amend(run, T2, { owner: 'late' });

      expect(act).toThrow(InvalidTransitionError);
      expect(act).toThrow(`Run run-1 is ${state} and can no longer change`);
    });
  });

  describe('deadlineOf', () => {
    it('counts from creation when the run was never claimed', () => {
      expect(deadlineOf(fresh())).toBe(Date.parse(T0) + 600_000);
    });

    it('counts from the first claim', () => {
      const run = transition(fresh(), 'dispatching', T1);

      expect(deadlineOf(run)).toBe(Date.parse(T1) + 600_000);
    });
  });

  describe('properties', () => {
    const moves = fc.array(fc.constantFrom(...RUN_STATES), { maxLength: 30 });

    it('accepts exactly the allowed moves, one version per move, and never leaves a terminal state', () => {
      fc.assert(
        fc.property(moves, (targets) => {
          let run = fresh();
          for (const to of targets) {
            const before = run;
            if (isTerminal(before.state) || !ALLOWED[before.state].includes(to)) {
              expect(() => transition(before, to, T1)).toThrow(InvalidTransitionError);
              continue;
            }
            run = transition(before, to, T1);
            expect(run.state).toBe(to);
            expect(run.version).toBe(before.version + 1);
            expect(run.history.length).toBe(run.version);
          }
        }),
      );
    });

    it('once terminal, every further transition and amend throws', () => {
      const terminalRun = fc.constantFrom(...TERMINAL_STATES).map(runIn);
      fc.assert(
        fc.property(terminalRun, moves, (run, targets) => {
          for (const to of targets) {
            expect(() => transition(run, to, T2)).toThrow(InvalidTransitionError);
          }
          expect(() => amend(run, T2, { owner: 'x' })).toThrow(InvalidTransitionError);
          expect(requestCancel(run, T2)).toBe(run);
        }),
      );
    });

    it('a cancel request cancels a queued run, flags a claimed one and leaves a finished one alone', () => {
      fc.assert(
        fc.property(moves, (targets) => {
          const run = targets.reduce(
            (r, to) => (ALLOWED[r.state].includes(to) ? transition(r, to, T1) : r),
            fresh(),
          );

          const next = requestCancel(run, T2);

          if (isTerminal(run.state)) expect(next).toBe(run);
          else if (run.state === 'queued')
            expect(next).toMatchObject({ state: 'cancelled', cancelRequested: true });
          else
            expect(next).toMatchObject({ state: run.state, cancelRequested: true, version: run.version + 1 });
        }),
      );
    });
  });
});
