/** Time source, injectable so tests control deadlines. */
export interface Clock {
  /** ISO-8601 timestamp. */
  now(): string;
  nowMs(): number;
}

export const systemClock: Clock = {
  now: () => new Date().toISOString(),
  nowMs: () => Date.now(),
};
