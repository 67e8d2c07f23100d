import { describe, expect, it } from 'vitest';
import { tableOf, verdictOf } from '../../../bench/all.ts';

describe('bench:all verdicts', () => {
  it('judges a ratio goal against the floor measured in the same run', () => {
    expect(verdictOf({ now: 120, floor: 100, unit: 'ms', goal: '≤ 1.3×' })).toBe('met');
    expect(verdictOf({ now: 140, floor: 100, unit: 'ms', goal: '≤ 1.3×' })).toBe('missed');
    expect(verdictOf({ now: 60, floor: 100, unit: 'runs/s', goal: '≥ 0.5' })).toBe('met');
    expect(verdictOf({ now: 40, floor: 100, unit: 'runs/s', goal: '≥ 0.5' })).toBe('missed');
  });

  it('judges a goal with its own unit against the figure itself, converting seconds and milliseconds', () => {
    expect(verdictOf({ now: 800, floor: 0, unit: 'ms', goal: '≤ 1 s' })).toBe('met');
    expect(verdictOf({ now: 1.2, floor: 0, unit: 's', goal: '≤ 1 s' })).toBe('missed');
    expect(verdictOf({ now: 1.2, floor: 0, unit: 's', goal: '≤ 1500 ms' })).toBe('met');
  });

  it('asks for the floor exactly when the goal is the minimum', () => {
    expect(verdictOf({ now: 11, floor: 11, unit: 'calls', goal: '= the minimum' })).toBe('met');
    expect(verdictOf({ now: 12, floor: 11, unit: 'calls', goal: '= the minimum' })).toBe('missed');
  });

  it('leaves a goal it cannot read unjudged rather than guessing', () => {
    expect(verdictOf({ now: 1, floor: 1, unit: 'ms', goal: 'fast' })).toBe('?');
    expect(verdictOf({ now: 1, floor: 0, unit: 'ms', goal: '≤ 1.3×' })).toBe('?');
  });

  it('prints one row per figure, as Markdown on request', () => {
    const figures = [
      { figure: 'Lambda load + first call, Healthz', now: 5, floor: 2, unit: 'ms', goal: '≤ 3×' },
      { figure: 'start → healthy', now: 0.6, floor: 0, unit: 's', goal: '≤ 1 s' },
    ];
    const md = tableOf(figures, true).split('\n');
    expect(md).toHaveLength(4);
    expect(md[2]).toBe('| Lambda load + first call, Healthz | 5.00 ms | 2.00 ms | 2.50× | ≤ 3× | met |');
    expect(md[3]).toBe('| start → healthy | 0.60 s | — | — | ≤ 1 s | met |');
    expect(tableOf(figures, false)).toContain('Healthz');
  });
});
