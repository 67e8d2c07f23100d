import { parseArgs } from 'node:util';

/** A mistake in how the CLI was called: exit 64 with a hint. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  json: { type: 'boolean' },
  url: { type: 'string' },
  follow: { type: 'boolean', short: 'f' },
  file: { type: 'string' },
  kind: { type: 'string' },
  target: { type: 'string' },
  targets: { type: 'string' },
  asset: { type: 'string' },
  'extra-vars': { type: 'string' },
  secret: { type: 'string', multiple: true },
  timeout: { type: 'string' },
  'ssh-user': { type: 'string' },
  'managed-account': { type: 'string' },
  operation: { type: 'string' },
  'idempotency-key': { type: 'string' },
  batch: { type: 'string' },
  state: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  path: { type: 'string' },
  overwrite: { type: 'boolean' },
} as const;

type OptionName = keyof typeof OPTIONS;
const GLOBAL: readonly OptionName[] = ['help', 'json', 'url'];
const RUN_REQUEST: readonly OptionName[] = [
  'kind',
  'asset',
  'extra-vars',
  'secret',
  'timeout',
  'ssh-user',
  'managed-account',
  'operation',
];

/** Each command: its positional arguments and the options it takes besides the global ones. */
const COMMANDS = {
  'targets put': { positionals: ['id'], options: ['file'] },
  'targets list': { positionals: [], options: [] },
  'runs submit': { positionals: [], options: [...RUN_REQUEST, 'target', 'idempotency-key', 'follow'] },
  'runs get': { positionals: ['id'], options: [] },
  'runs list': { positionals: [], options: ['batch', 'state', 'limit', 'cursor'] },
  'runs logs': { positionals: ['id'], options: ['follow'] },
  'runs cancel': { positionals: ['id'], options: [] },
  'batches submit': { positionals: [], options: [...RUN_REQUEST, 'targets', 'follow'] },
  'batches get': { positionals: ['id'], options: ['follow'] },
  'batches retry': { positionals: ['id'], options: ['follow'] },
  'assets upload': { positionals: ['file'], options: ['path', 'overwrite'] },
  'assets list': { positionals: [], options: [] },
} as const satisfies Record<string, { positionals: readonly string[]; options: readonly OptionName[] }>;

export type CommandName = keyof typeof COMMANDS;
export const COMMAND_NAMES = Object.keys(COMMANDS) as CommandName[];

type Flags = {
  [K in OptionName]: (typeof OPTIONS)[K] extends { readonly multiple: true }
    ? string[]
    : (typeof OPTIONS)[K]['type'] extends 'boolean'
      ? boolean
      : string;
};
/** Parsed options: `--secret` is repeatable, the switches are booleans, the rest strings. */
export type OptionValues = Partial<Flags>;

export type Invocation =
  | { readonly command: 'help'; readonly topic?: string }
  | {
      readonly command: CommandName;
      /** Positional arguments by name (`id`, `file`). */
      readonly args: Readonly<Record<string, string>>;
      readonly options: OptionValues;
    };

/**
 * Turn argv into one command, its positionals and its options. Options may
 * appear anywhere; an option the command does not take is a usage error
 * (`--follow` on `runs get` is refused rather than silently ignored).
 *
 * @example
 * parseInvocation(['runs', 'logs', '01J…', '--follow'])
 * // { command: 'runs logs', args: { id: '01J…' }, options: { follow: true } }
 */
export function parseInvocation(argv: readonly string[]): Invocation {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const values = parsed.values as OptionValues;
  const [group, verb, ...rest] = parsed.positionals;
  if (group === undefined || group === 'help')
    return { command: 'help', ...(verb === undefined ? {} : { topic: verb }) };
  if (values.help === true) return { command: 'help', topic: group };
  if (verb === undefined) throw new UsageError(`${group} needs a command: ${verbsOf(group)}`);
  const name = `${group} ${verb}`;
  if (!isCommand(name)) {
    throw new UsageError(
      COMMAND_NAMES.some((c) => c.startsWith(`${group} `))
        ? `Unknown command "${name}": ${group} takes ${verbsOf(group)}`
        : `Unknown command "${group}"`,
    );
  }
  const spec = COMMANDS[name];
  const allowed = new Set<string>([...GLOBAL, ...spec.options]);
  const stray = Object.keys(values).filter((key) => !allowed.has(key));
  if (stray.length > 0)
    throw new UsageError(`${name} does not take ${stray.map((s) => `--${s}`).join(', ')}`);
  if (rest.length !== spec.positionals.length) {
    const wanted = spec.positionals.map((p) => `<${p}>`).join(' ');
    throw new UsageError(
      rest.length < spec.positionals.length
        ? `${name} needs ${wanted}`
        : `${name} takes ${wanted === '' ? 'no arguments' : wanted}; unexpected "${rest.slice(spec.positionals.length).join(' ')}"`,
    );
  }
  const args = Object.fromEntries(spec.positionals.map((p, i) => [p, rest[i] ?? '']));
  return { command: name, args, options: values };
}

const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name);

const verbsOf = (group: string): string =>
  COMMAND_NAMES.filter((c) => c.startsWith(`${group} `))
    .map((c) => c.slice(group.length + 1))
    .join(' | ') || 'nothing (unknown command)';

/** `JSON` or `@file`: the value of --extra-vars and --operation. */
export async function jsonArgument(
  flag: string,
  value: string,
  readFile: (path: string) => Promise<Buffer>,
): Promise<Record<string, unknown>> {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = (await readFile(value.slice(1))).toString('utf8');
    } catch (error) {
      throw new UsageError(`${flag}: cannot read ${value.slice(1)}: ${(error as Error).message}`);
    }
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${flag} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${flag} must be a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

/** `--secret var=name`, repeatable: a secret binding. */
export function secretBinding(value: string): { var: string; secret: string } {
  const at = value.indexOf('=');
  if (at <= 0 || at === value.length - 1)
    throw new UsageError(`--secret takes var=secret-name, got "${value}"`);
  return { var: value.slice(0, at), secret: value.slice(at + 1) };
}

/** A positive whole number option. */
export function positiveInt(flag: string, value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new UsageError(`${flag} must be a positive whole number`);
  return Number(value);
}

/**
 * The run request shared by `runs submit` and `batches submit`, built from
 * the options; the API validates the rest and answers with field errors.
 */
export async function runRequest(
  options: OptionValues,
  readFile: (path: string) => Promise<Buffer>,
): Promise<Record<string, unknown>> {
  if (options.kind === undefined)
    throw new UsageError('--kind is required (vm, cluster_play, database_play, k8s_op, portainer)');
  if (options.asset === undefined)
    throw new UsageError('--asset is required (a path on the storage backend)');
  return {
    kind: options.kind,
    asset: options.asset,
    ...(options['extra-vars'] === undefined
      ? {}
      : { extraVars: await jsonArgument('--extra-vars', options['extra-vars'], readFile) }),
    ...(options.secret === undefined ? {} : { secrets: options.secret.map(secretBinding) }),
    ...(options.timeout === undefined ? {} : { timeoutSeconds: positiveInt('--timeout', options.timeout) }),
    ...(options['ssh-user'] === undefined ? {} : { sshUser: options['ssh-user'] }),
    ...(options['managed-account'] === undefined ? {} : { managedAccount: options['managed-account'] }),
    ...(options.operation === undefined
      ? {}
      : { operation: await jsonArgument('--operation', options.operation, readFile) }),
  };
}
