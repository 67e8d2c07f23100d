import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { RunSecretStore } from '../ports/run-secret-store.ts';

/*
 * Secrets Manager for per-run secrets, loaded on first use: apart from
 * lazy-aws.ts so a submit's bundle, which needs it only when a run carries
 * plaintext passwords, holds no other AWS client but its own.
 */

/** The Secrets Manager client alone, for a function that needs no other (a submit keeping passwords). */
export function lazySecretsManagerClient(): () => Promise<SecretsManagerClient> {
  return onFirstUse(
    async () => new (await import('@aws-sdk/client-secrets-manager')).SecretsManagerClient({}),
  );
}

/**
 * The per-run secrets of plaintext passwords sent at submit, under `prefix`
 * (adapters/secrets-manager/run-secrets.ts `submittedRunSecrets`).
 */
export function lazySubmittedRunSecrets(
  client: () => Promise<SecretsManagerClient>,
  prefix: string,
): RunSecretStore {
  const store = onFirstUse(async () => {
    const [adapter, secretsManager] = await Promise.all([
      import('../adapters/secrets-manager/run-secrets.ts'),
      client(),
    ]);
    return adapter.submittedRunSecrets(
      new adapter.SecretsManagerRunSecrets({ client: secretsManager, prefix }),
    );
  });
  return {
    put: async (runId, key, value) => (await store()).put(runId, key, value),
    deleteFor: async (runId, keys) =>
      keys.length === 0 ? undefined : (await store()).deleteFor(runId, keys),
    // SecretsManagerRunSecrets.owns: a name under the prefix. Answered without loading the SDK.
    owns: (name) => name.startsWith(prefix),
  };
}
