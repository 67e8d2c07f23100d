import { parseDocument, stringify } from 'yaml';
import { LaunchRejectedError } from '../../domain/errors.ts';

/**
 * Reading, checking and rewriting a stored kubeconfig, for ClusterAuth.
 *
 * The text is read the way kubectl reads it: YAML 1.1 (Go's yaml.v2, so `no`
 * is a boolean and `<<` merges), with timestamp-looking values kept as
 * strings, as yaml.v2 does for untyped fields. It is written back as YAML 1.1
 * too, which quotes every string a 1.1 reader could take for something else.
 *
 * Errors never quote the kubeconfig — not even a context or user name — since
 * the same file may carry a client key or a token: they say where the
 * problem is (a line and column, `clusters[1]`) and what is wrong.
 */

type Mapping = Record<string, unknown>;

export interface KubeconfigUser {
  readonly name: string;
  /** The `user` mapping (`token`, `exec`, `client-certificate-data` …); empty when absent. */
  readonly user: Readonly<Mapping>;
}

export interface Kubeconfig {
  /** The whole document as plain data (the current `users` entries included). */
  readonly data: Readonly<Mapping>;
  /** The user the current context authenticates as; undefined when the context names none. */
  readonly currentUser: KubeconfigUser | undefined;
  /** Every entry of `users`, by name. */
  readonly users: ReadonlyMap<string, Readonly<Mapping>>;
}

/** What an `exec` credential plugin block asks kubectl to run. */
export interface ExecPlugin {
  readonly command: string;
  readonly args: readonly string[];
  /** The block's `env` entries, name → value. */
  readonly env: ReadonlyMap<string, string>;
}

const TIMESTAMP_TAG = 'tag:yaml.org,2002:timestamp';

const isMapping = (value: unknown): value is Mapping =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);

const nonEmptyString = (value: unknown): value is string => typeof value === 'string' && value !== '';

/**
 * Parse and check a kubeconfig: valid YAML, a mapping, at least one cluster
 * (each with a name and a server), a `current-context` naming a context that
 * exists, whose cluster exists and whose user, if it names one, exists.
 * `label` starts every error ("The stored kubeconfig of EKS cluster …").
 *
 * @example
 * const config = readKubeconfig(text, 'The stored kubeconfig of AKS cluster "prod" (target t1)');
 * config.currentUser?.user.exec; // the plugin block to replace, if any
 */
export function readKubeconfig(text: string, label: string): Kubeconfig {
  const reject = (problem: string): never => {
    throw new LaunchRejectedError(`${label} ${problem}`);
  };

  // The parser's own messages quote the offending source line: report only its position.
  const doc = parseDocument(text, {
    version: '1.1',
    customTags: (tags) => tags.filter((tag) => typeof tag === 'string' || tag.tag !== TIMESTAMP_TAG),
  });
  const parseError = doc.errors[0];
  if (parseError !== undefined) {
    const at = parseError.linePos?.[0];
    reject(`is not valid YAML${at === undefined ? '' : ` (line ${at.line}, column ${at.col})`}`);
  }
  let data: unknown;
  try {
    data = doc.toJS();
  } catch {
    // Too many aliases (a "billion laughs" document) or an unresolved one.
    reject('is not usable YAML: it uses too many or unresolved aliases');
  }
  if (!isMapping(data)) return reject('is not a kubeconfig: its top level is not a mapping');

  const clusters = listOf(data.clusters, 'clusters', reject);
  if (clusters.length === 0) reject('has no clusters');
  const clusterNames = new Set<string>();
  clusters.forEach((entry, i) => {
    if (!nonEmptyString(entry.name)) reject(`has a cluster without a name (clusters[${i}])`);
    const cluster = entry.cluster;
    if (!isMapping(cluster) || !nonEmptyString(cluster.server)) {
      reject(`has a cluster without a server (clusters[${i}])`);
    }
    clusterNames.add(entry.name as string);
  });

  const users = new Map<string, Mapping>();
  listOf(data.users, 'users', reject).forEach((entry, i) => {
    if (!nonEmptyString(entry.name)) reject(`has a user without a name (users[${i}])`);
    if (entry.user !== undefined && entry.user !== null && !isMapping(entry.user)) {
      reject(`has a user whose credentials are not a mapping (users[${i}])`);
    }
    users.set(entry.name as string, isMapping(entry.user) ? entry.user : {});
  });

  const contexts = listOf(data.contexts, 'contexts', reject);
  const currentName = data['current-context'];
  if (!nonEmptyString(currentName)) reject('names no current-context');
  const current = contexts.find((entry) => entry.name === currentName);
  if (current === undefined) {
    return reject(`has a current-context that is not one of its ${contexts.length} context(s)`);
  }
  const context = current.context;
  if (!isMapping(context)) return reject('has a current context without a context mapping');
  if (!nonEmptyString(context.cluster) || !clusterNames.has(context.cluster)) {
    reject('has a current context whose cluster is not defined in it');
  }
  let currentUser: KubeconfigUser | undefined;
  if (nonEmptyString(context.user)) {
    const user = users.get(context.user);
    if (user === undefined) return reject('has a current context whose user is not defined in it');
    currentUser = { name: context.user, user };
  }
  return { data, currentUser, users };
}

function listOf(value: unknown, key: string, reject: (problem: string) => never): Mapping[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return reject(`is not a kubeconfig: ${key} is not a list`);
  return value.map((entry, i) =>
    isMapping(entry) ? entry : reject(`has an entry that is not a mapping (${key}[${i}])`),
  );
}

/** Whether kubectl would run something (an `exec` plugin or a legacy `auth-provider`) to get credentials. */
export function hasPluginAuth(user: Readonly<Mapping>): boolean {
  return user.exec !== undefined || user['auth-provider'] !== undefined;
}

/** Whether the user carries credentials of its own: a token, a client certificate or basic auth. */
export function hasOwnCredentials(user: Readonly<Mapping>): boolean {
  return ['token', 'tokenFile', 'client-certificate', 'client-certificate-data', 'username'].some((key) =>
    nonEmptyString(user[key]),
  );
}

/** The user's `exec` block, or undefined when it has none (or one without a command). */
export function execPlugin(user: Readonly<Mapping>): ExecPlugin | undefined {
  const exec = user.exec;
  if (!isMapping(exec) || !nonEmptyString(exec.command)) return undefined;
  const args = Array.isArray(exec.args) ? exec.args.map((arg) => String(arg)) : [];
  const env = new Map<string, string>();
  if (Array.isArray(exec.env)) {
    for (const entry of exec.env) {
      if (isMapping(entry) && nonEmptyString(entry.name)) env.set(entry.name, String(entry.value ?? ''));
    }
  }
  return { command: exec.command, args, env };
}

/**
 * The value of a command-line option in `args`: `--name value` or
 * `--name=value`, for any of `names`; the last one wins, as with most CLIs.
 *
 * @example
 * optionValue(['eks', 'get-token', '--cluster-name', 'prod'], ['--cluster-name']); // 'prod'
 */
export function optionValue(args: readonly string[], names: readonly string[]): string | undefined {
  let found: string | undefined;
  args.forEach((arg, i) => {
    for (const name of names) {
      if (arg === name && i + 1 < args.length) found = args[i + 1];
      else if (arg.startsWith(`${name}=`)) found = arg.slice(name.length + 1);
    }
  });
  return found;
}

/**
 * Token-prepare the users of a kubeconfig: each user in `tokens` gets its
 * bearer token in place of its `exec` / `auth-provider` block (and of any
 * `tokenFile` or basic auth, which kubectl would otherwise prefer or refuse
 * next to a token); every other user loses its `exec` / `auth-provider`
 * block, which nothing on the runner could run and which kubectl would try
 * before failing. Clusters, contexts, `current-context`, preferences and
 * extensions are kept as they are.
 *
 * Returns undefined when nothing had to change, so the caller can hand back
 * the stored text byte for byte.
 *
 * @example
 * const yaml = tokenPrepared(config, new Map([['prod-user', token]])) ?? storedText;
 */
export function tokenPrepared(config: Kubeconfig, tokens: ReadonlyMap<string, string>): string | undefined {
  let changed = false;
  const rawUsers = Array.isArray(config.data.users) ? config.data.users : [];
  const users = rawUsers.map((entry: Mapping) => {
    const name = entry.name as string;
    const user: Mapping = isMapping(entry.user) ? { ...entry.user } : {};
    const token = tokens.get(name);
    if (token === undefined && !hasPluginAuth(user)) return entry;
    changed = true;
    delete user.exec;
    delete user['auth-provider'];
    if (token !== undefined) {
      delete user.tokenFile;
      delete user.username;
      delete user.password;
      user.token = token;
    }
    return { ...entry, user };
  });
  if (!changed) return undefined;
  return stringify({ ...config.data, users }, { version: '1.1', lineWidth: 0 });
}
