import { once } from '../lib/once.ts';
import * as z from '../lib/zod.ts';
import { ENV_NAME } from './env-name.ts';
import { RUN_KINDS } from './run-kind.ts';
import { isShimOwnedEnv } from './shim-protocol.ts';

/**
 * The task spec: what the task shim needs to run one run, with no secret value
 * in it, so it is safe on a command line, in a container override or in a
 * queue message. Secret values travel separately, as environment variables
 * named in `secretVars`, `secretEnvNames` and `sshKeyEnv`.
 *
 * One schema, written with `zod/mini` so the shim's bundle stays small: task
 * preparation (shared/app/task-prep.ts) checks the spec it built against it,
 * and the shim checks the spec it was handed (it may be started by hand or by
 * an older control plane). Its type is {@link TaskSpec}.
 *
 * @example
 * const checked = checkTaskSpec(JSON.parse(process.env.RW_TASK ?? 'null'));
 * if (!checked.ok) throw new Error(`invalid task spec: ${checked.problems.join('; ')}`);
 */

export const ASSET_TYPES = ['playbook', 'script', 'powershell', 'rpm', 'deb'] as const;
export type AssetType = (typeof ASSET_TYPES)[number];

/**
 * The schemas, built on the first check rather than when the module loads: a
 * Lambda function that never prepares a task (the cancel route, the ECS
 * events) loads this module with the AWS composition and would otherwise
 * build them on every cold start.
 */
function buildSchemas() {
  const envName = z.string().check(z.regex(ENV_NAME));
  const record = z.record(z.string(), z.unknown());

  const AnsibleInventorySchema = z.readonly(
    z.object({
      all: z.readonly(
        z.object({
          hosts: z.readonly(z.record(z.string(), z.readonly(record))),
          vars: z.optional(z.readonly(record)),
        }),
      ),
    }),
  );

  /**
   * The kubectl/helm action of a `k8s_op` run, as shaped as
   * shared/domain/run.ts's `K8sOperation`; the limits on its values are the
   * API's to enforce, the shim refuses only what would be read as a flag.
   */
  const K8sOperationShape = z.discriminatedUnion('action', [
    z.readonly(z.object({ action: z.literal('apply'), namespace: z.optional(z.string()) })),
    z.readonly(z.object({ action: z.literal('delete'), namespace: z.optional(z.string()) })),
    z.readonly(z.object({ action: z.literal('get_secret'), namespace: z.string(), name: z.string() })),
    z.readonly(z.object({ action: z.literal('helm_repo_add'), repoName: z.string(), repoUrl: z.string() })),
    z.readonly(
      z.object({
        action: z.literal('helm_upgrade'),
        release: z.string(),
        chart: z.string(),
        namespace: z.optional(z.string()),
        version: z.optional(z.string()),
      }),
    ),
  ]);

  const FIELDS = {
    runId: z.string().check(z.minLength(1)),
    kind: z.enum(RUN_KINDS),
    /** Where the shim finds the asset: a path it can read, or a URL it downloads. */
    asset: z.discriminatedUnion('kind', [
      z.readonly(z.object({ kind: z.literal('file'), path: z.string().check(z.minLength(1)) })),
      z.readonly(z.object({ kind: z.literal('url'), url: z.string() })),
    ]),
    assetType: z.enum(ASSET_TYPES),
    inventory: AnsibleInventorySchema,
    /** Forwarded to playbooks only; scripts and packages ignore them. */
    extraVars: z.readonly(record),
    /** `{ var: 'db_password', env: 'RW_SECRET_0' }`: the value of env RW_SECRET_0 becomes play var db_password. */
    secretVars: z.readonly(z.array(z.readonly(z.object({ var: envName, env: envName })))),
    /**
     * Secret environment the tool receives under these very names (`KUBECONFIG`
     * with the token-prepared kubeconfig, `PORTAINER_API_TOKEN`); redacted from
     * output like `secretVars`. Values arrive like every other secret env.
     */
    secretEnvNames: z.optional(z.readonly(z.array(envName))),
    /** The env holding an SSH private key: the shim writes it to a 0600 file and sets `ansible_ssh_private_key_file`. */
    sshKeyEnv: z.optional(envName),
    /** Non-secret environment for the tool (`PORTAINER_URL`); never a variable the shim owns or a secret's. */
    env: z.optional(z.readonly(z.record(envName, z.string()))),
    /** k8s_op runs: the kubectl/helm action. */
    operation: z.optional(K8sOperationShape),
    timeoutSeconds: z.number().check(z.gte(0)),
  };

  const TaskSpecSchema = z.readonly(
    z.object(FIELDS).check(z.superRefine(crossFieldRules, { when: () => true })),
  );
  return { FIELDS, TaskSpecSchema };
}
type Schemas = ReturnType<typeof buildSchemas>;

/** The task spec's schema (and its parts), built once, on first use. */
export const taskSpecSchemas: () => Schemas = once(buildSchemas);

export type AnsibleInventory = z.output<Schemas['FIELDS']['inventory']>;
type Field = keyof Schemas['FIELDS'];

/** What each field must be, as the shim says it: one problem per field, in the order of the fields. */
const FIELD_PROBLEMS: Readonly<Record<Field, string>> = {
  runId: 'runId must be a non-empty string',
  kind: 'kind is not a run kind',
  asset: "asset must be { kind: 'file', path } or { kind: 'url', url }",
  assetType: 'assetType is not an asset type',
  inventory: 'inventory must be { all: { hosts: { … } } }',
  extraVars: 'extraVars must be an object',
  secretVars: 'secretVars must be a list of { var, env } with valid names',
  secretEnvNames: 'secretEnvNames must be a list of environment variable names',
  sshKeyEnv: 'sshKeyEnv must be an environment variable name',
  env: 'env must be an object of NAME: "value" strings',
  operation: 'operation must be an object with an action',
  timeoutSeconds: 'timeoutSeconds must be a non-negative number',
};
/** The fields in the order FIELDS lists them (FIELD_PROBLEMS lists them in that order too). */
const FIELD_ORDER: readonly string[] = Object.keys(FIELD_PROBLEMS);

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The rules across fields, checked even when another field is wrong so that
 * every problem is named at once: `env` may not set what the shim owns nor a
 * variable a secret arrives in, and a `k8s_op` run needs its operation.
 */
function crossFieldRules(raw: unknown, ctx: z.core.$RefinementCtx<unknown>): void {
  if (!isRecord(raw)) return;
  const env = raw.env;
  if (isRecord(env) && Object.entries(env).every(([k, v]) => ENV_NAME.test(k) && typeof v === 'string')) {
    const owned = Object.keys(env).filter(isShimOwnedEnv);
    if (owned.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['env'],
        message: `env must not set ${owned.join(', ')}: PATH, RW_* and the variables the shim sets for the tool are the shim's own`,
      });
    }
    const secretNames = new Set<unknown>([
      ...(Array.isArray(raw.secretVars)
        ? raw.secretVars.map((s: unknown) => (isRecord(s) ? s.env : undefined))
        : []),
      ...(Array.isArray(raw.secretEnvNames) ? raw.secretEnvNames : []),
      raw.sshKeyEnv,
    ]);
    const shadowing = Object.keys(env).filter((name) => secretNames.has(name));
    if (shadowing.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['env'],
        message: `env must not set ${shadowing.join(', ')}: a secret arrives in that variable`,
      });
    }
  }
  if (raw.kind === 'k8s_op' && raw.operation === undefined) {
    ctx.addIssue({ code: 'custom', path: ['operation'], message: 'a k8s_op run needs an operation' });
  }
}

export type TaskSpec = z.output<Schemas['TaskSpecSchema']>;

/** The one problem of a spec that is not a JSON object: there are no fields to name. */
export const NOT_AN_OBJECT = 'the task spec must be a JSON object';

export type TaskSpecCheck =
  | { readonly ok: true; readonly spec: TaskSpec }
  | { readonly ok: false; readonly problems: readonly string[] };

/**
 * Check a task spec (parsed JSON, or one just built); on failure, name every
 * problem once, in the order of the fields — never a value, since a wrong
 * field may hold a secret by mistake.
 */
export function checkTaskSpec(raw: unknown): TaskSpecCheck {
  if (!isRecord(raw)) return { ok: false, problems: [NOT_AN_OBJECT] };
  const result = taskSpecSchemas().TaskSpecSchema.safeParse(raw);
  if (result.success) return { ok: true, spec: result.data };
  const ranked = result.error.issues.map((issue, i) => {
    const field = String(issue.path[0] ?? '');
    const problem =
      issue.code === 'custom' ? issue.message : (FIELD_PROBLEMS[field as Field] ?? `${field} is not allowed`);
    const rank = FIELD_ORDER.indexOf(field);
    return { problem, rank: rank < 0 ? FIELD_ORDER.length : rank, i };
  });
  ranked.sort((a, b) => a.rank - b.rank || a.i - b.i);
  return { ok: false, problems: [...new Set(ranked.map((r) => r.problem))] };
}
