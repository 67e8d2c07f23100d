import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

let lastTime = -1;
let lastRandom: number[] = [];

/**
 * A ULID: 48-bit time + 80-bit randomness in Crockford base32, so ids sort by
 * creation time. Monotonic within one millisecond (the random part is
 * incremented), which keeps lists stable when many runs are created at once.
 *
 * @example newId() // '01JD3Q6Z8W3S9V0M2K4T7YB5NE'
 */
export function newId(now: number = Date.now()): string {
  if (now === lastTime) {
    let i = lastRandom.length - 1;
    while (i >= 0 && lastRandom[i] === 31) {
      lastRandom[i] = 0;
      i--;
    }
    if (i >= 0) lastRandom[i] = (lastRandom[i] ?? 0) + 1;
  } else {
    lastTime = now;
    lastRandom = [...randomBytes(16)].map((b) => b & 31);
  }
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time + lastRandom.map((d) => ALPHABET[d]).join('');
}
