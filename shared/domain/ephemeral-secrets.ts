import { ValidationError } from './errors.ts';
import { PLAINTEXT_PASSWORD_VARS } from './redaction.ts';

/** One plaintext password taken out of a run request's extra vars. */
export interface PlaintextPassword {
  readonly var: string;
  readonly value: string;
}

/**
 * Split a request's extra vars into what may be stored and the plaintext
 * passwords (`ansible_password` and its aliases), which must not be: they
 * become per-run secrets held in the mode's secret store for the run's
 * lifetime, and the run record keeps only a binding to that secret's name.
 * A password that is not a string is refused rather than stored as it is.
 *
 * @example
 * takePlaintextPasswords({ ansible_password: 'pw', port: 5986 });
 * // { extraVars: { port: 5986 }, passwords: [{ var: 'ansible_password', value: 'pw' }] }
 */
export function takePlaintextPasswords(extraVars: Readonly<Record<string, unknown>>): {
  readonly extraVars: Record<string, unknown>;
  readonly passwords: readonly PlaintextPassword[];
} {
  const kept: Record<string, unknown> = {};
  const passwords: PlaintextPassword[] = [];
  for (const [name, value] of Object.entries(extraVars)) {
    if (!isPlaintextPasswordVar(name)) {
      kept[name] = value;
      continue;
    }
    if (typeof value !== 'string') {
      // The message names the variable only: the value may be the password in another type.
      throw new ValidationError(`${name} must be a string`, [
        { path: `body.extraVars.${name}`, message: 'must be a string' },
      ]);
    }
    passwords.push({ var: name, value });
  }
  return { extraVars: kept, passwords };
}

export const isPlaintextPasswordVar = (name: string): boolean =>
  (PLAINTEXT_PASSWORD_VARS as readonly string[]).includes(name);
