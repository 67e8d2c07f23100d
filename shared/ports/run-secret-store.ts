/**
 * Per-run secrets: values a client sent in plaintext (a WinRM
 * `ansible_password`) held in the mode's secret store for the run's lifetime
 * only. The run record keeps the name `put` returns, bound to the play
 * variable like any named secret, so the task receives the value through the
 * mode's SecretSource; the value itself is in no record, message, log or
 * error. `deleteFor` runs wherever the run ends.
 *
 * @example
 * const name = await runSecrets.put(run.id, 'ansible_password', password);
 * // run.secrets: [{ var: 'ansible_password', secret: name }] … the run ends:
 * await runSecrets.deleteFor(run.id, ['ansible_password']);
 */
export interface RunSecretStore {
  /** Keep `value` for the run under `key` (a variable name); returns the name SecretSource.get resolves. */
  put(runId: string, key: string, value: string): Promise<string>;
  /** Delete the run's values under these keys; idempotent (absent values are fine). */
  deleteFor(runId: string, keys: readonly string[]): Promise<void>;
  /** True for a name in this store's per-run namespace: clients may not bind those themselves. */
  owns(name: string): boolean;
}
