/** Time source, injectable so tests control deadlines. */
export interface Clock {
  /** ISO-8601 timestamp. */
  now(): string;
  nowMs(): number;
}

let lastMs = Number.NaN;
let lastIso = '';

export const systemClock: Clock = {
  // The string of the last millisecond asked for, kept: a local run stamps some twenty-five records and
  // history entries, mostly within one millisecond of another, and toISOString costs about 1.2 µs a call
  // here where Date.now costs 0.1.
  now: () => {
    const ms = Date.now();
    if (ms !== lastMs) {
      lastIso = new Date(ms).toISOString();
      lastMs = ms;
    }
    return lastIso;
  },
  nowMs: () => Date.now(),
};
