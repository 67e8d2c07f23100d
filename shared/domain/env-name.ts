/**
 * The one pattern for an environment-variable name, which is also the pattern
 * for an Ansible variable name: a letter or underscore, then letters, digits
 * and underscores (`RW_SECRET_0`, `db_password`). POSIX shells accept exactly
 * these as names to `export`, and Ansible refuses anything else as a variable.
 *
 * @example
 * isEnvName('PORTAINER_URL'); // true
 * isEnvName('A B'); // false
 */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Whether `name` is a valid environment-variable (and Ansible variable) name. */
export const isEnvName = (name: string): boolean => ENV_NAME.test(name);
