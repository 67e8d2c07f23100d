import type { Settings } from '../config/settings.ts';
import type { CheckoutRequest, CredentialBroker, Lease } from '../ports/credential-broker.ts';
import type { SecretSource } from '../ports/secret-source.ts';

/**
 * The Password Safe broker of a deployment, or undefined when it has none
 * (`password_safe_url` unset). The API key is read from the secret named by
 * `password_safe_api_key_secret` on first use, not at start-up: most runs
 * never check anything out, and a composition root must make no call.
 *
 * @example
 * const credentials = lazyPasswordSafe(settings, secrets); // CredentialBroker | undefined
 */
export function lazyPasswordSafe(
  settings: Pick<Settings, 'password_safe_url' | 'password_safe_runas' | 'password_safe_api_key_secret'>,
  secrets: SecretSource,
): CredentialBroker | undefined {
  if (settings.password_safe_url === undefined) return undefined;
  let broker: Promise<CredentialBroker> | undefined;
  const get = (): Promise<CredentialBroker> => {
    broker ??= (async () => {
      const name = settings.password_safe_api_key_secret;
      if (name === undefined) {
        throw new Error('Password Safe is configured without password_safe_api_key_secret');
      }
      // The broker's code loads with it, on first use: a function that never checks out does not load it.
      const [{ passwordSafeBrokerFromSettings }, apiKey] = await Promise.all([
        import('../adapters/password-safe/broker.ts'),
        secrets.get(name),
      ]);
      return passwordSafeBrokerFromSettings(settings, apiKey);
    })().catch((error: unknown) => {
      broker = undefined;
      throw error;
    });
    return broker;
  };
  return {
    checkout: async (request: CheckoutRequest): Promise<Lease> => (await get()).checkout(request),
    checkin: async (leaseId: string): Promise<void> => (await get()).checkin(leaseId),
  };
}
