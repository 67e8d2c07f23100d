import type { protos } from '@google-cloud/run';
import { isEnvName } from '../../domain/env-name.ts';
import { LaunchRejectedError } from '../../domain/errors.ts';
import type { Run } from '../../domain/run.ts';
import type { PreparedTask } from '../../ports/launcher.ts';
import type { CloudRunLauncherOptions } from './config.ts';
import { runLabels } from './handle.ts';

type Job = protos.google.cloud.run.v2.IJob;
type EnvVar = protos.google.cloud.run.v2.IEnvVar;

/** A literal env value may hold at most 32,768 bytes (Cloud Run EnvVar.value). */
export const CLOUD_RUN_ENV_VALUE_MAX_BYTES = 32_768;
/** Cloud Run's ceiling on a task's timeout: 7 days. */
const TASK_TIMEOUT_MAX_SECONDS = 604_800;
/** How long a per-run secret outlives the run's timeout before Secret Manager deletes it by itself. */
const SECRET_TTL_MARGIN_SECONDS = 86_400;
/** Secret Manager secret ids: at most 255 characters. */
const SECRET_ID_MAX = 255;

/**
 * The job of one run and attempt: one task, never retried by Cloud Run
 * (`maxRetries: 0`), with the run's timeout (at most Cloud Run's 7 days),
 * the container `env`, and the options' identity, resources and VPC access.
 *
 * @example
 * const job = jobFor(options, run, 'rw-01jd…-a1', 'chrweav/ansible-cloud', env);
 */
export function jobFor(
  options: Pick<
    CloudRunLauncherOptions,
    'project' | 'region' | 'vpcConnector' | 'resources' | 'serviceAccount'
  >,
  run: Run,
  jobId: string,
  image: string,
  env: EnvVar[],
): Job {
  const labels = runLabels({ runId: run.id, attempt: run.attempt }, jobId);
  const timeout = Math.min(Math.max(1, Math.ceil(run.timeoutSeconds)), TASK_TIMEOUT_MAX_SECONDS);
  const connector = connectorOf(options);
  return {
    labels,
    template: {
      labels,
      taskCount: 1,
      template: {
        containers: [
          {
            name: 'runner',
            image,
            env,
            ...(options.resources === undefined ? {} : { resources: { limits: { ...options.resources } } }),
          },
        ],
        maxRetries: 0,
        timeout: { seconds: timeout },
        ...(options.serviceAccount === undefined ? {} : { serviceAccount: options.serviceAccount }),
        ...(connector === undefined ? {} : { vpcAccess: { connector, egress: 'PRIVATE_RANGES_ONLY' } }),
      },
    },
  };
}

/**
 * The container's env: the spec and run id as plain values, every secret
 * as a Secret Manager reference. Minted material is written to per-run
 * secrets through `putSecret` here, before the job that references them exists.
 *
 * @example
 * const env = await jobEnvironment(run, jobId, prepared, (id, value, labels, ttl) => secrets.put(id, value, labels, ttl));
 * // [{ name: 'RW_TASK', value: '{…}' }, { name: 'RW_RUN_ID', value: '01jd…' }, { name: 'KUBECONFIG', valueSource: … }]
 */
export async function jobEnvironment(
  run: Run,
  jobId: string,
  prepared: PreparedTask,
  putSecret: (
    secretId: string,
    value: string,
    labels: Record<string, string>,
    ttlSeconds: number,
  ) => Promise<void>,
): Promise<EnvVar[]> {
  const spec = JSON.stringify(prepared.spec);
  const size = Buffer.byteLength(spec, 'utf8');
  if (size > CLOUD_RUN_ENV_VALUE_MAX_BYTES) {
    throw new LaunchRejectedError(
      `task spec too large for a Cloud Run env value (${size} bytes > ${CLOUD_RUN_ENV_VALUE_MAX_BYTES}); move extra vars to a file asset`,
    );
  }
  const named = new Set<string>([
    ...prepared.spec.secretVars.map((s) => s.env),
    ...(prepared.spec.secretEnvNames ?? []),
    ...(prepared.spec.sshKeyEnv === undefined ? [] : [prepared.spec.sshKeyEnv]),
    ...Object.keys(prepared.secretRefs),
    ...Object.keys(prepared.secretEnv),
  ]);
  const env: EnvVar[] = [
    { name: 'RW_TASK', value: spec },
    { name: 'RW_RUN_ID', value: run.id },
  ];
  const labels = runLabels({ runId: run.id, attempt: run.attempt }, jobId);
  const ttl = Math.min(run.timeoutSeconds, TASK_TIMEOUT_MAX_SECONDS) + SECRET_TTL_MARGIN_SECONDS;
  for (const envName of [...named].sort()) {
    if (!isEnvName(envName) || envName === 'RW_TASK' || envName === 'RW_RUN_ID') {
      throw new LaunchRejectedError(`Secret env name ${envName} cannot be used in a Cloud Run container`);
    }
    const ref = prepared.secretRefs[envName];
    if (ref !== undefined) {
      env.push({ name: envName, valueSource: { secretKeyRef: secretKeyRef(ref) } });
      continue;
    }
    const value = prepared.secretEnv[envName];
    if (value === undefined) {
      throw new LaunchRejectedError(
        `The task spec names secret env ${envName}, but neither a stored secret nor a value was prepared for it`,
      );
    }
    const secretId = `${jobId}-${envName}`;
    if (secretId.length > SECRET_ID_MAX) {
      throw new LaunchRejectedError(`Secret env name ${envName} is too long for a Secret Manager secret id`);
    }
    await putSecret(secretId, value, labels, ttl);
    env.push({ name: envName, valueSource: { secretKeyRef: { secret: secretId, version: 'latest' } } });
  }
  return env;
}

function connectorOf(
  options: Pick<CloudRunLauncherOptions, 'project' | 'region' | 'vpcConnector'>,
): string | undefined {
  const c = options.vpcConnector;
  if (c === undefined) return undefined;
  return c.includes('/') ? c : `projects/${options.project}/locations/${options.region}/connectors/${c}`;
}

/**
 * `projects/p/secrets/s/versions/3` → that secret and version; a bare name or
 * `projects/p/secrets/s` → its `latest` version.
 */
function secretKeyRef(ref: string): { secret: string; version: string } {
  const m = /^(projects\/[^/]+\/secrets\/[^/]+)\/versions\/([^/]+)$/.exec(ref);
  return m === null ? { secret: ref, version: 'latest' } : { secret: m[1]!, version: m[2]! };
}
