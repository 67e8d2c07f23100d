import {
  DomainError,
  LauncherUnavailableError,
  LaunchRejectedError,
  RunnerNotConfiguredError,
} from '../../domain/errors.ts';

/**
 * ACI's settings are incomplete: the seeds' message naming every missing key.
 *
 * @example
 * throw new AciNotConfiguredError(['azure_resource_group']);
 */
export class AciNotConfiguredError extends RunnerNotConfiguredError {
  constructor(missingKeys: readonly string[]) {
    super(`Ansible ACI runner is not configured: set ${missingKeys.join(', ')}`, missingKeys);
  }
}

/** What an `@azure/core-rest-pipeline` RestError (or anything else thrown) may carry. */
interface ArmErrorShape {
  readonly name?: string;
  readonly message?: string;
  readonly statusCode?: number;
  readonly code?: string;
}

const shapeOf = (error: unknown): ArmErrorShape =>
  typeof error === 'object' && error !== null ? (error as ArmErrorShape) : {};

/** HTTP status of an ARM failure; undefined when nothing answered (network, DNS, token). */
export const statusOf = (error: unknown): number | undefined => shapeOf(error).statusCode;

export const isNotFound = (error: unknown): boolean => statusOf(error) === 404;

/** 404 because the resource group itself is missing: a configuration problem, not a missing container group. */
export const isResourceGroupMissing = (error: unknown): boolean =>
  statusOf(error) === 404 && shapeOf(error).code === 'ResourceGroupNotFound';

const MAX_SAID = 500;

/**
 * Translate an ARM failure into a domain error. Retryable
 * (LauncherUnavailableError): throttling (429, which the SDK has already
 * retried when ARM sent Retry-After), 5xx (already retried by the SDK's
 * exponential policy), 408, 409 (another operation on the group is in
 * progress) and anything that never got an HTTP answer. Everything else —
 * 400 validation, 401/403 access, 404 — is the request's fault:
 * LaunchRejectedError.
 *
 * The SDK's RestError keeps the whole request, whose body holds the secure
 * environment values and the registry password, so it is never kept as the
 * `cause`: only its name, status and code are. `scrub` lists values that must
 * not appear in the message even if ARM quotes them back.
 *
 * @example
 * try { await aci.containerGroups.get(rg, name) } catch (e) { throw aciError(e, 'get container group') }
 */
export function aciError(error: unknown, action: string, scrub: readonly string[] = []): DomainError {
  if (error instanceof DomainError) return error;
  const e = shapeOf(error);
  const status = e.statusCode;
  let said = `${e.code ?? e.name ?? 'Error'}: ${e.message ?? String(error)}`;
  for (const value of scrub) if (value !== '') said = said.split(value).join('***');
  said = said.length <= MAX_SAID ? said : `${said.slice(0, MAX_SAID - 1)}…`;
  const cause = new Error(
    `${e.name ?? 'Error'}${status === undefined ? '' : ` ${status}`}${e.code === undefined ? '' : ` ${e.code}`}`,
  );
  if (status === undefined || status === 408 || status === 409 || status === 429 || status >= 500) {
    return new LauncherUnavailableError(`ACI ${action} failed, will retry (${said})`, { cause });
  }
  return new LaunchRejectedError(`ACI ${action} was refused (${said})`, { cause });
}
