import { resolve } from 'node:path';
import * as z from 'zod';
import { type FieldError, SettingsInvalidError } from '../../shared/domain/errors.ts';

/**
 * The standalone relay agent's environment, validated once at start. Every
 * problem is reported in one SettingsInvalidError naming the variable.
 *
 * | variable | meaning |
 * |---|---|
 * | `RELAY_ID` | stable id of this relay host; claimed runs carry `relay:<id>` as owner (required) |
 * | `RELAY_QUEUE_URL` | the relay queue's SQS URL (required) |
 * | `RUNS_TABLE` | the DynamoDB runs table (required) |
 * | `LOGS_TABLE` | DynamoDB table for run output; default `RUNS_TABLE` (items keyed `LOG#<runId>`) |
 * | `RELAY_ASSET_ROOT` | directory holding the playbooks and scripts runs name (required) |
 * | `RELAY_CONCURRENCY` | most runs at once, 1–64, default 3 |
 * | `RELAY_EXECUTOR` | `auto` (docker when an engine answers, else process), `docker`, `process` |
 * | `RELAY_WORK_DIR` | per-run work directories; keep it across restarts so runs are adopted; default `.remote-worker-relay` |
 * | `RELAY_DRAIN_SECONDS` | on SIGTERM, how long running runs may finish before the agent exits, default 30 |
 * | `RELAY_POLL_WAIT_SECONDS` | SQS long-poll wait, 1–20, default 20 (0 would poll in a tight loop) |
 * | `RELAY_SECRET_PREFIX` | only secrets whose name starts with this are resolved (matches the IAM policy) |
 * | `RELAY_SHIM_PATH` | a bundled task shim (`node shim.mjs`) for the process executor; default: the TypeScript source through tsx |
 * | `LOG_LEVEL` | DEBUG, INFO, WARN, ERROR; default INFO |
 *
 * The AWS SDK reads its own variables (AWS_REGION, AWS_ENDPOINT_URL, credentials).
 */

/** An unset variable and an empty one mean the same: the default. */
const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((v) => (v === '' ? undefined : v), schema.optional());

const text = () => z.string().trim().min(1, 'must not be empty');

const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

export const RelayEnvSchema = z.object({
  RELAY_ID: text().regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/,
    'letters, digits, . _ - only (up to 63), starting with a letter or digit',
  ),
  RELAY_QUEUE_URL: z.url({ protocol: /^https?$/, error: 'must be an SQS queue URL (https://…)' }),
  RUNS_TABLE: text(),
  LOGS_TABLE: optional(text()),
  RELAY_ASSET_ROOT: text(),
  RELAY_CONCURRENCY: optional(int(1, 64)),
  RELAY_EXECUTOR: optional(z.enum(['auto', 'docker', 'process'])),
  RELAY_WORK_DIR: optional(text()),
  RELAY_DRAIN_SECONDS: optional(int(0, 3600)),
  RELAY_POLL_WAIT_SECONDS: optional(int(1, 20)),
  RELAY_SECRET_PREFIX: optional(text()),
  RELAY_SHIM_PATH: optional(text()),
  LOG_LEVEL: optional(z.enum(['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'])),
});

export interface RelayConfig {
  readonly relayId: string;
  readonly queueUrl: string;
  readonly runsTable: string;
  readonly logsTable: string;
  readonly assetRoot: string;
  readonly concurrency: number;
  readonly executor: 'auto' | 'docker' | 'process';
  readonly workDir: string;
  readonly drainSeconds: number;
  readonly pollWaitSeconds: number;
  readonly secretPrefix?: string;
  readonly shimPath?: string;
  readonly logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR' | 'SILENT';
}

/**
 * @example
 * const config = loadRelayConfig(process.env); // SettingsInvalidError: "Invalid settings: RELAY_ID: …; RUNS_TABLE: …"
 */
export function loadRelayConfig(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
): RelayConfig {
  const parsed = RelayEnvSchema.safeParse(env);
  if (!parsed.success) {
    const problems: FieldError[] = parsed.error.issues.map((issue) => ({
      path: issue.path.map(String).join('.') || '(environment)',
      message:
        issue.code === 'invalid_type' && env[String(issue.path[0])] === undefined
          ? 'is required'
          : issue.message,
    }));
    throw new SettingsInvalidError(problems);
  }
  const e = parsed.data;
  return {
    relayId: e.RELAY_ID,
    queueUrl: e.RELAY_QUEUE_URL,
    runsTable: e.RUNS_TABLE,
    logsTable: e.LOGS_TABLE ?? e.RUNS_TABLE,
    assetRoot: resolve(cwd, e.RELAY_ASSET_ROOT),
    concurrency: e.RELAY_CONCURRENCY ?? 3,
    executor: e.RELAY_EXECUTOR ?? 'auto',
    workDir: resolve(cwd, e.RELAY_WORK_DIR ?? '.remote-worker-relay'),
    drainSeconds: e.RELAY_DRAIN_SECONDS ?? 30,
    pollWaitSeconds: e.RELAY_POLL_WAIT_SECONDS ?? 20,
    ...(e.RELAY_SECRET_PREFIX === undefined ? {} : { secretPrefix: e.RELAY_SECRET_PREFIX }),
    ...(e.RELAY_SHIM_PATH === undefined ? {} : { shimPath: resolve(cwd, e.RELAY_SHIM_PATH) }),
    logLevel: e.LOG_LEVEL ?? 'INFO',
  };
}
