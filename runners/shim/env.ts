import { type ContainerTarget, parseContainerTarget } from '../../shared/domain/container-target.ts';
import { orShimError } from './errors.ts';

/**
 * The shim's own settings read from its environment (see main.ts for the
 * whole contract). A value that is not a positive integer falls back to the
 * default rather than stopping a run.
 *
 * @example
 * const graceMs = positiveInt(env.RW_KILL_GRACE_MS, 5000);
 */
export function positiveInt(raw: string | undefined, fallback: number): number {
  const n = raw === undefined ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/** `RW_REDACT_ENV`: further variables whose values are redacted but stay in the tool's environment. */
export function redactEnvNames(env: NodeJS.ProcessEnv): string[] {
  return (env.RW_REDACT_ENV ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

/** `RW_CONTAINER`: the container the tool runs in (container mode), or undefined for process mode. */
export function containerTargetOf(env: NodeJS.ProcessEnv): ContainerTarget | undefined {
  const raw = env.RW_CONTAINER;
  if (raw === undefined || raw === '') return undefined;
  return orShimError(() => parseContainerTarget(raw));
}
