/**
 * Operator settings: the loader, over the one schema (settings/schema.ts,
 * one file per area: runners, each cloud runner, storage, …).
 *
 * This module reads JSON settings files only and imports no YAML parser, so a
 * Lambda bundle (shared/composition/aws-environment.ts) carries none: Lambda
 * takes its settings as environment variables. `./settings.ts` is the same
 * loader with YAML files read too, for local mode, the relay and the CLI.
 *
 * Keys keep the seeds' snake_case names (`ansible_runner_aws`, `k8s_runner_image`,
 * `ansible_ecs_subnet_id` …) so operators recognise them from the reference docs;
 * each can be overridden by an environment variable of the same name upper-cased.
 */
import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { type FieldError, SettingsInvalidError } from '../domain/errors.ts';
import type { Runner } from '../domain/run.ts';
import type * as z from '../lib/zod.ts';

import { readSealedSettings, SEALED_SETTINGS_ENV } from './sealed-settings.ts';
import { reportingTo, type SettingDef } from './settings/fields.ts';
import {
  checkSettings,
  SETTING_SHAPE,
  type SettingKey,
  type Settings,
  settingsSchema,
} from './settings/schema.ts';

export { SETTING_SHAPE, type SettingKey, type Settings, settingsSchema } from './settings/schema.ts';

/** Every runner some runner setting sends work to, for telling "not configured" from "not wanted". */
export function selectedRunners(settings: Settings): ReadonlySet<Runner> {
  return new Set(
    [
      settings.ansible_runner,
      settings.ansible_runner_aws,
      settings.ansible_runner_azure,
      settings.ansible_runner_gcp,
      settings.ansible_runner_portainer,
      settings.k8s_runner,
      settings.k8s_runner_aws,
      settings.k8s_runner_azure,
      settings.k8s_runner_gcp,
    ].filter((r): r is Runner => r !== undefined),
  );
}
export const SETTING_KEYS = Object.keys(SETTING_SHAPE) as readonly SettingKey[];

const keySchemas = new Map<string, z.ZodMiniType>();
/** One key's schema, built the first time that key is parsed. */
function keySchema(key: SettingKey): z.ZodMiniType {
  let schema = keySchemas.get(key);
  if (schema === undefined) {
    schema = SETTING_SHAPE[key]();
    keySchemas.set(key, schema);
  }
  return schema;
}

/** A key built by `optionalText` (settings/fields.ts): a string given for it is checked without its schema. */
const isPlainText = (key: string): boolean =>
  (SETTING_SHAPE[key as SettingKey] as SettingDef | undefined)?.plainText === true;

/**
 * Environment variables are strings; the schema stays strict for files (a quoted
 * `"3"` in YAML is a mistake worth reporting), so coercion happens here, driven by
 * the schema's own input types rather than a hand-kept list that could drift.
 */
const inputTypes = new Map<string, EnvInput>();
/** Computed on first use, per key: a function's environment sets a few of the keys. */
function inputTypeOf(key: string): EnvInput {
  if (isPlainText(key)) return 'text';
  let type = inputTypes.get(key);
  if (type === undefined) {
    type = envInputOf(keySchema(key as SettingKey));
    inputTypes.set(key, type);
  }
  return type;
}

/** What an environment variable's text is turned into before the key's schema checks it. */
export type EnvInput = 'number' | 'boolean' | 'object' | 'text';

/**
 * The JSON type a schema takes as input — what its JSON Schema (`io: 'input'`)
 * says under `type`, read from the schema's definition rather than by building
 * the JSON Schema: the generator is 20 KB of every Lambda bundle and
 * milliseconds per key. Wrappers answer for what they wrap, a pipe for its
 * input; what a JSON Schema gives no single type (a union, a nullable, a
 * preprocess) is text, left for the schema to check.
 * `test/unit/config/load-settings.test.ts` holds it to z.toJSONSchema for every key.
 *
 * @example
 * envInputOf(z._default(z.int(), 3)); // 'number'
 */
export function envInputOf(schema: z.core.$ZodType): EnvInput {
  const def = schema._zod.def as z.core.$ZodTypeDef & {
    readonly innerType?: z.core.$ZodType;
    readonly in?: z.core.$ZodType;
    readonly getter?: () => z.core.$ZodType;
  };
  switch (def.type) {
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'object':
    case 'record':
      return 'object';
    case 'optional':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return def.innerType === undefined ? 'text' : envInputOf(def.innerType);
    case 'pipe':
      return def.in === undefined ? 'text' : envInputOf(def.in);
    case 'lazy':
      return def.getter === undefined ? 'text' : envInputOf(def.getter());
    default:
      return 'text';
  }
}

/**
 * Parse options of a schema parsed once per process (settings, the Lambda
 * environment): without zod's JIT. zod 4 compiles a fast path for each object
 * schema (`new Function`) on its first parse, which pays back only over many
 * parses; for the one parse at start-up it costs more than the parse itself
 * (≈ 14 ms of a Lambda cold start for the settings object). Same result,
 * same issues.
 */
export const ONCE = { jitless: true } as const;

const TRUE = new Set(['true', '1', 'yes', 'on']);
const FALSE = new Set(['false', '0', 'no', 'off']);

function coerceEnv(key: string, raw: string): unknown {
  const value = raw.trim();
  switch (inputTypeOf(key)) {
    case 'number':
      // Anything that is not plainly a number stays a string so zod reports it as one.
      return /^[+-]?\d+(\.\d+)?$/.test(value) ? Number(value) : raw;
    case 'boolean': {
      const lower = value.toLowerCase();
      if (TRUE.has(lower)) return true;
      if (FALSE.has(lower)) return false;
      return raw;
    }
    case 'object':
      // A map from an environment variable is JSON text; anything else stays a string for zod to report.
      try {
        return JSON.parse(value) as unknown;
      } catch {
        return raw;
      }
    default:
      return raw;
  }
}

type Source =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'env'; readonly name: string };

const describeSource = (source: Source | undefined): string =>
  source === undefined
    ? 'default value'
    : source.kind === 'env'
      ? `from env ${source.name}`
      : `from ${source.path}`;

const CONFIG_ENV = 'REMOTE_WORKER_CONFIG';

export interface LoadSettingsOptions {
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * Injected so tests and bundlers can replace the file system; must throw ENOENT for a missing file.
   * Reads the settings file and the files settings name (kubernetes_kubeconfig).
   */
  readonly readFile?: (path: string) => string;
  /** Parses `.yaml`/`.yml` settings files; without it such a file is refused, naming REMOTE_WORKER_CONFIG. */
  readonly parseYaml?: (text: string) => unknown;
}

const isMissingFile = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT';

/** A file's text, or why it could not be read (`missing`: it does not exist). */
function readSafely(
  path: string,
  readFile: (path: string) => string,
): { readonly content: string } | { readonly missing: boolean; readonly error: unknown } {
  try {
    return { content: readFile(path) };
  } catch (error) {
    return { missing: isMissingFile(error), error };
  }
}

function readConfigFile(
  path: string,
  readFile: (path: string) => string,
  parseYaml: ((text: string) => unknown) | undefined,
): Record<string, unknown> {
  const fail = (message: string): never => {
    throw new SettingsInvalidError([{ path: CONFIG_ENV, message }]);
  };
  const read = readSafely(path, readFile);
  if (!('content' in read)) {
    return fail(
      read.missing
        ? `settings file ${path} does not exist`
        : `cannot read settings file ${path}: ${(read.error as Error).message}`,
    );
  }
  const { content } = read;
  const yaml = /\.ya?ml$/i.test(path);
  if (yaml && parseYaml === undefined) {
    return fail(
      `settings file ${path} is YAML, which this build does not read: give the settings as environment variables or a JSON file`,
    );
  }
  let parsed: unknown;
  try {
    parsed = yaml && parseYaml !== undefined ? parseYaml(content) : JSON.parse(content);
  } catch (error) {
    return fail(`settings file ${path} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(error as Error).message}`);
  }
  // An empty YAML document is an empty settings file, not an error.
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    return fail(`settings file ${path} must hold an object of settings`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Read settings once at cold start: the file named by REMOTE_WORKER_CONFIG (JSON,
 * or YAML for .yaml/.yml when `parseYaml` is given), then one environment
 * variable per key, upper-cased. Throws one SettingsInvalidError listing every
 * problem, each naming its key and where the bad value came from.
 *
 * @example
 * const settings = loadSettings(); // ANSIBLE_RUNNER_AWS=ecs overrides ansible_runner_aws from the file
 */
export function loadSettings(options: LoadSettingsOptions = {}): Settings {
  const env = options.env ?? process.env;
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));

  const raw: Record<string, unknown> = {};
  const sources = new Map<string, Source>();

  const configPath = env[CONFIG_ENV];
  if (configPath !== undefined && configPath !== '') {
    for (const [key, value] of Object.entries(readConfigFile(configPath, readFile, options.parseYaml))) {
      // A YAML key left blank (`ansible_ecs_cluster:`) means "unset", as an empty env var does.
      if (value === null) continue;
      raw[key] = value;
      sources.set(key, { kind: 'file', path: configPath });
    }
  }

  // Settings checked when the deployment was built: taken as they are while their digest matches.
  const checked = new Set<string>();
  const sealed = readSealedSettings(env);
  if (sealed !== undefined && 'problem' in sealed) {
    throw new SettingsInvalidError([{ path: SEALED_SETTINGS_ENV, message: sealed.problem }]);
  }
  for (const [key, value] of Object.entries(sealed?.values ?? {})) {
    raw[key] = value;
    sources.set(key, { kind: 'env', name: SEALED_SETTINGS_ENV });
    if (sealed?.checked === true) checked.add(key);
  }

  for (const key of SETTING_KEYS) {
    const name = key.toUpperCase();
    const value = env[name];
    // An empty variable counts as unset so `FOO=` in a compose file does not clobber the file.
    if (value === undefined || value === '') continue;
    raw[key] = coerceEnv(key, value);
    sources.set(key, { kind: 'env', name });
    checked.delete(key);
  }

  const given = parseGiven(raw, checked);
  // Checked whether or not the rest parses, so one error lists every problem.
  const fileProblems = checkFiles(raw, readFile, sources, options.parseYaml);
  if (given !== undefined && fileProblems.length === 0) return given;
  if (given !== undefined) throw new SettingsInvalidError(fileProblems);

  const result = settingsSchema().safeParse(raw, ONCE);
  // The key-by-key parse refuses only what the whole schema refuses; should they ever differ, the schema decides.
  if (result.success && fileProblems.length === 0) return result.data;
  if (result.success) throw new SettingsInvalidError(fileProblems);

  const problems: FieldError[] = [];
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys)
        problems.push(unknownSetting(key, `(${describeSource(sources.get(key))})`));
      continue;
    }
    const [key, ...rest] = issue.path;
    const path = [key, ...rest].filter((p) => p !== undefined).join('.');
    problems.push({
      path: path === '' ? '(root)' : path,
      message: `${issue.message} (${describeSource(typeof key === 'string' ? sources.get(key) : undefined)})`,
    });
  }
  throw new SettingsInvalidError([...problems, ...fileProblems]);
}

/**
 * The settings `raw` gives, parsed key by key: only the keys given build
 * their schemas, and an unset key takes its recorded default or stays unset
 * (test/unit/config/settings/lazy.test.ts holds every key to what the whole
 * schema makes of it). The keys in `checked` are sealed settings a build
 * already put through their schemas (sealed-settings.ts): taken as they are.
 * The same value as the whole schema's; on any problem,
 * undefined, and the whole schema then reports it as it always has (every
 * issue, in its order, with the rules it skips after a type error).
 */
function parseGiven(
  raw: Readonly<Record<string, unknown>>,
  checked: ReadonlySet<string>,
): Settings | undefined {
  for (const key of Object.keys(raw)) if (!Object.hasOwn(SETTING_SHAPE, key)) return undefined;
  const settings: Record<string, unknown> = {};
  for (const key of SETTING_KEYS) {
    if (checked.has(key)) {
      settings[key] = raw[key];
      continue;
    }
    if (Object.hasOwn(raw, key)) {
      const given = raw[key];
      if (isPlainText(key) && typeof given === 'string') {
        // `optionalText`'s two rules without its schema; empty text goes to the whole schema's message.
        const trimmed = given.trim();
        if (trimmed === '') return undefined;
        settings[key] = trimmed;
        continue;
      }
      const parsed = keySchema(key).safeParse(given, ONCE);
      if (!parsed.success) return undefined;
      settings[key] = parsed.data;
      continue;
    }
    const def: SettingDef = SETTING_SHAPE[key];
    if ('fallback' in def) settings[key] = def.fallback;
  }
  let broken = false;
  checkSettings(
    settings as Settings,
    reportingTo(() => {
      broken = true;
    }),
  );
  return broken ? undefined : (settings as Settings);
}

/**
 * For a build (the stack's synth): settings as their environment variables
 * would give them (text, by key), each read and put through its schema as
 * loadSettings reads a variable, split into the values to seal
 * (sealed-settings.ts: a process takes them as they are) and the rest, text
 * as it came, to be given as variables and checked where they are read: a
 * value its schema puts out as nothing, or as something its schema would not
 * take back the same through JSON. Throws SettingsInvalidError naming each
 * value its schema refuses; the rules across settings run where settings are
 * loaded, on all of them.
 *
 * @example
 * const { sealed, rest } = sealableSettings({ ansible_runner_aws: 'ecs', default_timeout_seconds: '3600' });
 * // sealed: { ansible_runner_aws: 'ecs', default_timeout_seconds: 3600 }, rest: {}
 */
export function sealableSettings(variables: Readonly<Record<string, string>>): {
  sealed: Record<string, unknown>;
  rest: Record<string, string>;
} {
  const sealed: Record<string, unknown> = {};
  const rest: Record<string, string> = {};
  const problems: FieldError[] = [];
  for (const [key, text] of Object.entries(variables)) {
    if (!Object.hasOwn(SETTING_SHAPE, key)) {
      problems.push(unknownSetting(key));
      continue;
    }
    const schema = keySchema(key as SettingKey);
    const parsed = schema.safeParse(coerceEnv(key, text), ONCE);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        problems.push({ path: [key, ...issue.path].join('.'), message: issue.message });
      }
      continue;
    }
    const out = parsed.data;
    const back = out === undefined ? undefined : schema.safeParse(JSON.parse(JSON.stringify(out)), ONCE);
    if (back?.success === true && isDeepStrictEqual(back.data, out)) sealed[key] = out;
    else rest[key] = text;
  }
  if (problems.length > 0) throw new SettingsInvalidError(problems);
  return { sealed, rest };
}

/**
 * Settings that name a file are checked here, once, when settings are loaded:
 * a missing kubeconfig otherwise surfaces as a bare ENOENT naming no setting
 * (local mode) or as a failed first run (AWS). Only the shape is checked, and
 * messages never quote the file's content: a kubeconfig holds tokens.
 */
function checkFiles(
  raw: Readonly<Record<string, unknown>>,
  readFile: (path: string) => string,
  sources: ReadonlyMap<string, Source>,
  parseYaml: ((text: string) => unknown) | undefined,
): FieldError[] {
  const given = raw.kubernetes_kubeconfig;
  // Not a string, or blank: the schema reports it.
  if (typeof given !== 'string' || given.trim() === '') return [];
  const path = given.trim();
  const problem = (message: string): FieldError[] => [
    {
      path: 'kubernetes_kubeconfig',
      message: `${message} (${describeSource(sources.get('kubernetes_kubeconfig'))})`,
    },
  ];
  const read = readSafely(path, readFile);
  if (!('content' in read)) {
    return problem(
      read.missing
        ? `names ${path}, which does not exist`
        : `names ${path}, which cannot be read (${(read.error as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  const { content } = read;
  // Without a YAML parser (Lambda) the file is checked for being there; the pod runner parses it on first use.
  if (parseYaml === undefined) return [];
  let parsed: unknown;
  try {
    parsed = parseYaml(content);
  } catch {
    return problem(`names ${path}, which is not YAML`);
  }
  const config = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  if (!Array.isArray(config.clusters) || config.clusters.length === 0) {
    return problem(`names ${path}, which is not a kubeconfig (it lists no clusters)`);
  }
  if (typeof config['current-context'] !== 'string' || config['current-context'] === '') {
    return problem(`names ${path}, which has no current-context`);
  }
  return [];
}

/** The problem with a key no setting has (`where`: where it came from), offering the key it is likely a typo of. */
function unknownSetting(key: string, where?: string): FieldError {
  const hint = closestKey(key);
  const from = where === undefined ? '' : ` ${where}`;
  return {
    path: key,
    message: `unknown setting${from}${hint === undefined ? '' : `; did you mean ${hint}?`}`,
  };
}

/** A typo is usually one or two edits away from a real key; offer it. */
function closestKey(unknown: string): SettingKey | undefined {
  let best: SettingKey | undefined;
  let bestDistance = 3;
  for (const key of SETTING_KEYS) {
    const d = editDistance(unknown.toLowerCase(), key);
    if (d < bestDistance) {
      best = key;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution);
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
