import { config, maxLength, minLength, string } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

/**
 * The project's zod: `zod/mini` with zod's English messages. Every schema
 * module imports it as `import * as z from '../lib/zod.ts'`.
 *
 * Why mini and not classic `zod`: a Lambda function loads every schema its
 * handler reaches before the first call answers, and classic zod's methods
 * (`.optional()`, `.min()`, …) keep the whole library in the bundle — about
 * 90 KB minified, some 11 ms to load on a cold start here, plus ~5 ms for
 * its first schema — where the functions of `zod/mini` are tree-shaken down
 * to the few a module calls (bench/lambda-bundles.ts).
 *
 * Classic zod installs English messages on its first schema; mini installs
 * none, and its issues would all read "Invalid input". This module installs
 * them once, on import, so both give the same messages. (Classic also
 * installs a memoizer that lets a schema parse cyclic input; every input
 * here is parsed JSON or the environment, which cannot be cyclic.)
 *
 * @example
 * import * as z from '../lib/zod.ts';
 * const Port = z.int().check(z.minimum(1), z.maximum(65535));
 * Port.safeParse(0).error?.issues[0]?.message; // 'Too small: expected number to be >=1'
 */
config(en());

export * from 'zod/mini';

/**
 * A string of `min` to `max` characters, with zod's own length messages: the
 * shape of most free-text fields of the API and the domain.
 *
 * @example
 * textBetween(1, 63).safeParse('').error?.issues[0]?.message; // 'Too small: expected string to have >=1 characters'
 */
export const textBetween = (min: number, max: number) => string().check(minLength(min), maxLength(max));
