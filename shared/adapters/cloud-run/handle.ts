import { createHash } from 'node:crypto';
import type { RunAttempt } from '../../ports/launcher.ts';

/**
 * How a Cloud Run job and execution are tied to their run. Pure; shared by
 * the launcher and anything that later needs to find a run's objects
 * (a reconciler collecting leftovers by label).
 *
 * - job id `rw-<runId>-a<attempt>`: one job per run and attempt, so a second
 *   delivery of the same attempt finds the job it created (CreateJob answers
 *   409) and never makes another. Cloud Run job ids are lower-case letters,
 *   digits and `-`, start with a letter and end with a letter or digit. A run
 *   id that does not fit that alphabet (or the length) is replaced by a
 *   readable prefix plus a short hash of it.
 * - handle `gcp:<project>/<region>/<jobId>/<executionId>`: stored on the run.
 * - labels `remote_worker_run_id`, `remote_worker_attempt`,
 *   `remote_worker_job`: label values are lower-case, so the run id label is
 *   the sanitised form; `remote_worker_job` is exact and is what the per-run
 *   Secret Manager secrets are found by on cleanup.
 *
 * @example
 * cloudRunJobId({ runId: '01JD3Q6Z8W3S9V0M2K4T7YB5NE', attempt: 1 }) // 'rw-01jd3q6z8w3s9v0m2k4t7yb5ne-a1'
 * formatCloudRunHandle({ project: 'p', region: 'europe-west1', jobId: 'rw-x-a1', executionId: 'rw-x-a1-7kq2p' })
 * // 'gcp:p/europe-west1/rw-x-a1/rw-x-a1-7kq2p'
 */
export interface CloudRunHandle {
  readonly project: string;
  readonly region: string;
  readonly jobId: string;
  readonly executionId: string;
}

export type { RunAttempt };

const PREFIX = 'gcp:';
/**
 * Cloud Run allows 63 characters for a job id, but execution ids are the job
 * id plus `-` and a 5-character suffix, and Cloud Run asks that job name plus
 * execution token stay under 63; keeping job ids to 56 leaves that room.
 */
export const JOB_ID_MAX = 56;
/** GCP label values: up to 63 lower-case letters, digits, `_` and `-`. */
const LABEL_VALUE_MAX = 63;
const HASH_CHARS = 10;
const JOB_PREFIX = /^[a-z][a-z0-9-]{0,19}$/;
/** A ULID (Crockford base32, upper case): lower-casing it is lossless, since Crockford ignores case. */
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const DNS_LIKE = /^[a-z0-9]+(-[a-z0-9]+)*$/;

const RUN_ID_LABEL = 'remote_worker_run_id';
const ATTEMPT_LABEL = 'remote_worker_attempt';
export const JOB_LABEL = 'remote_worker_job';

const hashOf = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, HASH_CHARS);

/** Throws RangeError for a prefix Cloud Run would refuse as the start of a job id. */
export function checkJobPrefix(prefix: string): void {
  if (!JOB_PREFIX.test(prefix) || prefix.endsWith('-')) {
    throw new RangeError(
      `Cloud Run job id prefix ${JSON.stringify(prefix)} must be 1-20 lower-case letters, digits or '-', start with a letter and not end with '-'`,
    );
  }
}

export function cloudRunJobId({ runId, attempt }: RunAttempt, prefix = 'rw'): string {
  checkJobPrefix(prefix);
  if (!Number.isSafeInteger(attempt) || attempt < 0) throw new RangeError(`attempt ${attempt} is not valid`);
  const tail = `-a${attempt}`;
  const lower = runId.toLowerCase();
  // Lower-casing is only lossless for ids that were lower-case already or are ULIDs.
  const exact = DNS_LIKE.test(lower) && (runId === lower || ULID.test(runId));
  const plain = `${prefix}-${lower}${tail}`;
  if (exact && plain.length <= JOB_ID_MAX) return plain;
  const hash = hashOf(runId);
  const room = JOB_ID_MAX - prefix.length - 1 - 1 - hash.length - tail.length;
  const readable = lower
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+/, '')
    .slice(0, Math.max(0, room))
    .replace(/-+$/, '');
  return readable === '' ? `${prefix}-${hash}${tail}` : `${prefix}-${readable}-${hash}${tail}`;
}

/** A label value for any text: itself when it already is one, else a readable prefix and a hash. */
export function labelValue(text: string): string {
  if (/^[a-z0-9_-]*$/.test(text) && text.length <= LABEL_VALUE_MAX) return text;
  const hash = hashOf(text);
  const readable = text
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '_')
    .slice(0, LABEL_VALUE_MAX - hash.length - 1);
  return `${readable}-${hash}`;
}

export function runLabels(key: RunAttempt, jobId: string): Record<string, string> {
  return {
    // A ULID reads the same in lower case; anything else that is not a label value already gets hashed.
    [RUN_ID_LABEL]: labelValue(ULID.test(key.runId) ? key.runId.toLowerCase() : key.runId),
    [ATTEMPT_LABEL]: String(key.attempt),
    [JOB_LABEL]: jobId,
  };
}

export function formatCloudRunHandle(h: CloudRunHandle): string {
  return `${PREFIX}${h.project}/${h.region}/${h.jobId}/${h.executionId}`;
}

export function parseCloudRunHandle(handle: string | undefined): CloudRunHandle | undefined {
  if (handle === undefined || !handle.startsWith(PREFIX)) return undefined;
  const parts = handle.slice(PREFIX.length).split('/');
  if (parts.length !== 4 || parts.some((p) => p === '')) return undefined;
  const [project, region, jobId, executionId] = parts as [string, string, string, string];
  return { project, region, jobId, executionId };
}

/** `projects/p/locations/r/jobs/j/executions/e` → its parts; undefined for anything else. */
export function parseExecutionName(
  name: string | null | undefined,
): { project: string; region: string; jobId: string; executionId: string } | undefined {
  const m = /^projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/]+)\/executions\/([^/]+)$/.exec(name ?? '');
  if (m === null) return undefined;
  return { project: m[1]!, region: m[2]!, jobId: m[3]!, executionId: m[4]! };
}

export const jobParent = (project: string, region: string): string =>
  `projects/${project}/locations/${region}`;
export const jobName = (project: string, region: string, jobId: string): string =>
  `${jobParent(project, region)}/jobs/${jobId}`;
export const executionName = (h: CloudRunHandle): string =>
  `${jobName(h.project, h.region, h.jobId)}/executions/${h.executionId}`;
