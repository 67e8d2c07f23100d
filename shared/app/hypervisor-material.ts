import { LaunchRejectedError, NotFoundError } from '../domain/errors.ts';
import {
  configuredHypervisor,
  type Hypervisor,
  type HypervisorSettings,
  notConfiguredReason,
} from '../domain/hypervisors.ts';
import type { SecretSource } from '../ports/secret-source.ts';

/** The env the hypervisor's login password travels in (becomes `ansible_password`). */
export const HYPERVISOR_PASSWORD_ENV = 'RW_HYPERVISOR_PASSWORD';

export interface HypervisorMaterial {
  readonly secretEnv: Readonly<Record<string, string>>;
  readonly secretRefs: Readonly<Record<string, string>>;
  readonly secretVars: readonly { readonly var: string; readonly env: string }[];
}

/**
 * A hypervisor group's login for one run: its `<h>_password_secret`, read
 * from the secret store when the run starts and handed to the play as
 * `ansible_password` (redacted from the output like every secret). Without a
 * password secret the runner's own SSH keys are used.
 *
 * @throws LaunchRejectedError when the integration is no longer configured or its secret cannot be read.
 */
export async function hypervisorMaterial(
  deps: { readonly secrets: SecretSource; readonly settings?: HypervisorSettings | undefined },
  name: Hypervisor,
  resolveStored: boolean,
): Promise<HypervisorMaterial> {
  const configured = deps.settings === undefined ? undefined : configuredHypervisor(deps.settings, name);
  if (configured === undefined) throw new LaunchRejectedError(notConfiguredReason(name));
  const secret = configured.passwordSecret;
  if (secret === undefined) return { secretEnv: {}, secretRefs: {}, secretVars: [] };
  let value: string | undefined;
  if (resolveStored) {
    try {
      value = await deps.secrets.get(secret);
    } catch (error) {
      if (error instanceof NotFoundError) {
        throw new LaunchRejectedError(
          `Secret ${secret} (${name}_password_secret) could not be resolved: store the ${name} login password under that name`,
        );
      }
      throw error;
    }
  }
  return {
    secretEnv: value === undefined ? {} : { [HYPERVISOR_PASSWORD_ENV]: value },
    secretRefs: { [HYPERVISOR_PASSWORD_ENV]: secret },
    secretVars: [{ var: 'ansible_password', env: HYPERVISOR_PASSWORD_ENV }],
  };
}
