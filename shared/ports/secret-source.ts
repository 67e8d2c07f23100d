/**
 * Resolves named secrets at launch. Values never leave the process except into
 * the task's ephemeral environment; errors name the secret, never its value.
 *
 * @example
 * const value = await secrets.get('db-admin-password');
 */
export interface SecretSource {
  /** Throws NotFoundError naming the secret when it does not exist. */
  get(name: string): Promise<string>;
}
