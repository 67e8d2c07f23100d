import { createHash } from 'node:crypto';

/**
 * Settings a deployment checked when it was built, handed to a process as one
 * environment variable: `REMOTE_WORKER_SETTINGS`, a JSON object of setting
 * values as the settings schema put them out, and
 * `REMOTE_WORKER_SETTINGS_SHA256`, the SHA-256 of that exact text. The stack
 * writes both at synth (infra/function-environment.ts), so a Lambda cold
 * start takes the values as they are instead of building and running a zod
 * schema per setting (3–7% of a function's load and first call here).
 *
 * A digest is no signature: anyone who can edit a function's environment can
 * write a matching one. It tells text the stack wrote from text edited by
 * hand since, which loadSettings then checks setting by setting as it checks
 * any other source.
 */
export const SEALED_SETTINGS_ENV = 'REMOTE_WORKER_SETTINGS';
export const SEALED_SETTINGS_DIGEST_ENV = 'REMOTE_WORKER_SETTINGS_SHA256';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The two variables for `values`, settings already checked (and put out) by
 * their schemas.
 *
 * @example
 * sealedSettingsEnvironment({ ansible_runner_aws: 'ecs' });
 * // { REMOTE_WORKER_SETTINGS: '{"ansible_runner_aws":"ecs"}', REMOTE_WORKER_SETTINGS_SHA256: '…' }
 */
export function sealedSettingsEnvironment(values: Readonly<Record<string, unknown>>): Record<string, string> {
  const text = JSON.stringify(values);
  return { [SEALED_SETTINGS_ENV]: text, [SEALED_SETTINGS_DIGEST_ENV]: sha256(text) };
}

/** What `REMOTE_WORKER_SETTINGS` holds, and whether its digest says the stack wrote it as it is. */
export type SealedSettings =
  | { readonly values: Readonly<Record<string, unknown>>; readonly checked: boolean }
  | { readonly problem: string };

/**
 * The sealed settings in `env`, if any: its values, checked when the digest
 * matches the text; a problem when the text is not a JSON object.
 *
 * @example
 * const sealed = readSealedSettings(process.env); // undefined: not set
 */
export function readSealedSettings(
  env: Readonly<Record<string, string | undefined>>,
): SealedSettings | undefined {
  const text = env[SEALED_SETTINGS_ENV];
  if (text === undefined || text.trim() === '') return undefined;
  let values: unknown;
  try {
    values = JSON.parse(text);
  } catch {
    return { problem: 'must be a JSON object of settings; it is not JSON' };
  }
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    return { problem: 'must be a JSON object of settings' };
  }
  return {
    values: values as Record<string, unknown>,
    checked: env[SEALED_SETTINGS_DIGEST_ENV] === sha256(text),
  };
}
