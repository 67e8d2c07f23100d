/**
 * A run's states. Their own module, free of any schema library, so the
 * console's bundle can list them without carrying the API's zod schemas
 * (run.ts) along — as run-kind.ts does for the kinds.
 */
export const RUN_STATES = [
  'queued',
  'dispatching',
  'launched',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'timed_out',
  'refused',
] as const;
export type RunState = (typeof RUN_STATES)[number];

export const TERMINAL_STATES = ['succeeded', 'failed', 'cancelled', 'timed_out', 'refused'] as const;
export type TerminalState = (typeof TERMINAL_STATES)[number];
export const isTerminal = (state: RunState): state is TerminalState =>
  (TERMINAL_STATES as readonly string[]).includes(state);
