import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback fake of the Google REST calls CloudRunLauncher makes, written
 * from the public API references (Cloud Run Admin API v2, Cloud Logging v2,
 * Secret Manager v1). One server answers all three; the launcher is given its
 * address as the Cloud Run `apiEndpoint`/`port` and as the Logging and Secret
 * Manager base URLs.
 *
 * Cloud Run v2 (proto3 JSON, long-running operations carry `@type`):
 * - jobs.create  `POST   /v2/projects/{p}/locations/{l}/jobs?jobId=` → Operation, done
 * - jobs.get     `GET    /v2/projects/{p}/locations/{l}/jobs/{j}`
 * - jobs.delete  `DELETE /v2/projects/{p}/locations/{l}/jobs/{j}` → Operation, done (executions go too)
 * - jobs.run     `POST   /v2/projects/{p}/locations/{l}/jobs/{j}:run` → Operation, not done, metadata = Execution
 * - executions.get / .cancel `…/jobs/{j}/executions/{e}` / `…:cancel`
 * - tasks.list   `GET    …/executions/{e}/tasks`
 * - operations.get `GET  /v2/projects/{p}/locations/{l}/operations/{o}`
 * Cloud Logging: `POST /v2/entries:list` with a filter of `field op "value"`
 * comparisons joined by AND / OR and parentheses (anything else is a 400).
 * Secret Manager: `POST /v1/projects/{p}/secrets?secretId=`, `GET …/secrets?filter=labels.k=v`,
 * `POST …/secrets/{s}:addVersion`, `DELETE …/secrets/{s}`.
 *
 * Every request is recorded raw (method, path, query, headers, body text)
 * before it is answered. `failNext` injects failures per action, optionally
 * after the request took effect (an answer lost on the way back). Anything
 * else answers 400 `unsupportedByFake`, so a new call fails loudly.
 *
 * Where it differs from Google is listed in the header of
 * test/integration/cloud-run-launcher.test.ts.
 */

export type FakeAction =
  | 'createJob'
  | 'getJob'
  | 'deleteJob'
  | 'runJob'
  | 'getExecution'
  | 'cancelExecution'
  | 'listTasks'
  | 'getOperation'
  | 'listLogEntries'
  | 'createSecret'
  | 'listSecrets'
  | 'addSecretVersion'
  | 'deleteSecret';

export interface RecordedRequest {
  readonly action: FakeAction | 'unknown';
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export interface InjectedFailure {
  readonly status: number;
  /** Google's status name; derived from the HTTP status when absent. */
  readonly statusName?: string;
  readonly message?: string;
  /** How many calls fail; default 1. */
  readonly times?: number;
  /** How many calls of this action pass before the failures start; default 0. */
  readonly skip?: number;
  /** Carry out the request, then answer with the failure (the answer was lost). */
  readonly afterEffect?: boolean;
  readonly retryAfter?: string;
  /** Quote the request body in the error message (a careless server), to prove nobody passes it on. */
  readonly echoBody?: boolean;
}

export interface FakeLogEntryInput {
  readonly text?: string;
  readonly json?: Record<string, unknown>;
  readonly stream?: 'stdout' | 'stderr' | 'system';
  /** RFC 3339; the fake's clock (now) when absent. */
  readonly timestamp?: string;
  /** Unique id; an increasing one when absent. */
  readonly insertId?: string;
}

export interface FakeExecutionView {
  readonly name: string;
  readonly jobId: string;
  readonly state: 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  readonly cancelRequests: number;
}

export interface FakeCloudRun {
  readonly endpoint: string;
  readonly host: string;
  readonly port: number;
  /** The bearer token every request must carry. */
  readonly token: string;
  readonly requests: RecordedRequest[];
  jobIds(): string[];
  /** The job as created (the parsed CreateJob body). */
  jobBody(jobId: string): any;
  executions(jobId?: string): FakeExecutionView[];
  secretIds(): string[];
  /** Decoded versions of a secret, oldest first. */
  secretVersions(secretId: string): string[];
  secretLabels(secretId: string): Record<string, string> | undefined;
  /** A stored secret the operator made (the launcher only references these). */
  seedSecret(secretId: string, value: string): void;
  startExecution(name: string): void;
  succeedExecution(name: string): void;
  failExecution(name: string, result: { exitCode: number; message?: string }): void;
  appendLog(executionName: string, entry: FakeLogEntryInput): void;
  failNext(action: FakeAction, failure: InjectedFailure): void;
  close(): Promise<void>;
}

const STATUS_NAMES: Readonly<Record<number, string>> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  409: 'ALREADY_EXISTS',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

const JOB_ID = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const SECRET_ID = /^[A-Za-z0-9_-]{1,255}$/;
const ENV_VALUE_MAX = 32_768;
const LOG_PAGE_DEFAULT = 50;
const LOG_PAGE_MAX = 1000;
const TYPE_PREFIX = 'type.googleapis.com/google.cloud.run.v2.';

interface FakeJob {
  readonly name: string;
  readonly project: string;
  readonly region: string;
  readonly id: string;
  readonly uid: string;
  readonly body: any;
  readonly createTime: string;
  readonly executions: string[];
}

interface FakeExecution {
  readonly name: string;
  readonly id: string;
  readonly jobId: string;
  readonly project: string;
  readonly region: string;
  readonly uid: string;
  readonly createTime: string;
  readonly labels: Record<string, string>;
  readonly operation: string;
  state: FakeExecutionView['state'];
  startTime?: string;
  completionTime?: string;
  message?: string;
  exitCode?: number;
  cancelRequests: number;
}

interface FakeSecret {
  readonly labels: Record<string, string>;
  readonly versions: string[];
}

interface StoredEntry {
  readonly logName: string;
  readonly project: string;
  readonly resource: { type: string; labels: Record<string, string> };
  readonly labels: Record<string, string>;
  readonly timestamp: string;
  readonly insertId: string;
  readonly textPayload?: string;
  readonly jsonPayload?: Record<string, unknown>;
}

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly statusName: string = STATUS_NAMES[status] ?? 'UNKNOWN',
  ) {
    super(message);
  }
}

/** RFC 3339 → a string that sorts in time order (nanoseconds). */
function timeKey(ts: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/.exec(ts);
  if (m === null) throw new HttpProblem(400, `Invalid timestamp ${ts}`);
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}`;
}

// ---- a small Cloud Logging filter evaluator -------------------------------------------------

type Token = { kind: 'word' | 'string' | 'op' | 'lparen' | 'rparen'; text: string };

function tokenize(filter: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < filter.length) {
    const c = filter[i]!;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '(' || c === ')') {
      tokens.push({ kind: c === '(' ? 'lparen' : 'rparen', text: c });
      i += 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < filter.length && filter[j] !== '"') j += filter[j] === '\\' ? 2 : 1;
      tokens.push({ kind: 'string', text: JSON.parse(filter.slice(i, j + 1)) as string });
      i = j + 1;
    } else if ('<>=!'.includes(c)) {
      const two = filter.slice(i, i + 2);
      const op = ['>=', '<=', '!='].includes(two) ? two : c;
      tokens.push({ kind: 'op', text: op });
      i += op.length;
    } else {
      // A field path: segments joined by dots, a segment may be quoted.
      let j = i;
      let text = '';
      while (j < filter.length && !/[\s()<>=!]/.test(filter[j]!)) {
        if (filter[j] === '"') {
          let k = j + 1;
          while (k < filter.length && filter[k] !== '"') k += 1;
          text += filter.slice(j + 1, k);
          j = k + 1;
        } else {
          text += filter[j];
          j += 1;
        }
      }
      tokens.push({ kind: 'word', text });
      i = j;
    }
  }
  return tokens;
}

type Predicate = (entry: StoredEntry) => boolean;

function fieldOf(entry: StoredEntry, path: string): string | undefined {
  if (path === 'resource.type') return entry.resource.type;
  if (path.startsWith('resource.labels.'))
    return entry.resource.labels[path.slice('resource.labels.'.length)];
  if (path.startsWith('labels.')) return entry.labels[path.slice('labels.'.length)];
  if (path === 'timestamp') return entry.timestamp;
  if (path === 'insertId') return entry.insertId;
  if (path === 'logName') return entry.logName;
  throw new HttpProblem(400, `Field ${path} is not supported by the fake`);
}

function parseFilter(filter: string): Predicate {
  const tokens = tokenize(filter);
  let pos = 0;
  const peek = () => tokens[pos];
  const comparison = (): Predicate => {
    const field = tokens[pos++];
    const op = tokens[pos++];
    const value = tokens[pos++];
    if (field?.kind !== 'word' || op?.kind !== 'op' || value?.kind !== 'string') {
      throw new HttpProblem(400, `Unparseable filter near token ${pos}: ${filter}`);
    }
    const path = field.text;
    const expected = path === 'timestamp' ? timeKey(value.text) : value.text;
    return (entry) => {
      const raw = fieldOf(entry, path);
      if (raw === undefined) return false;
      const actual = path === 'timestamp' ? timeKey(raw) : raw;
      switch (op.text) {
        case '=':
          return actual === expected;
        case '!=':
          return actual !== expected;
        case '>':
          return actual > expected;
        case '>=':
          return actual >= expected;
        case '<':
          return actual < expected;
        default:
          return actual <= expected;
      }
    };
  };
  const primary = (): Predicate => {
    if (peek()?.kind === 'lparen') {
      pos += 1;
      const inner = orExpr();
      if (tokens[pos++]?.kind !== 'rparen') throw new HttpProblem(400, `Unbalanced parentheses: ${filter}`);
      return inner;
    }
    return comparison();
  };
  const andExpr = (): Predicate => {
    const parts = [primary()];
    while (peek()?.kind === 'word' && peek()?.text === 'AND') {
      pos += 1;
      parts.push(primary());
    }
    return (e) => parts.every((p) => p(e));
  };
  const orExpr = (): Predicate => {
    const parts = [andExpr()];
    while (peek()?.kind === 'word' && peek()?.text === 'OR') {
      pos += 1;
      parts.push(andExpr());
    }
    return (e) => parts.some((p) => p(e));
  };
  if (tokens.length === 0) return () => true;
  const predicate = orExpr();
  if (pos !== tokens.length) throw new HttpProblem(400, `Unparseable filter: ${filter}`);
  return predicate;
}

// ---- the server ---------------------------------------------------------------------------

export async function startFakeCloudRun(): Promise<FakeCloudRun> {
  const token = `fake-token-${randomUUID()}`;
  const requests: RecordedRequest[] = [];
  const jobs = new Map<string, FakeJob>();
  const executions = new Map<string, FakeExecution>();
  const operations = new Map<string, () => any>();
  const secrets = new Map<string, FakeSecret>();
  const entries: StoredEntry[] = [];
  const failures = new Map<FakeAction, InjectedFailure[]>();
  let insertCounter = 0;

  const now = () => new Date().toISOString();
  const random5 = () =>
    [...randomBytes(5)].map((b) => 'abcdefghijklmnopqrstuvwxyz0123456789'[b % 36]).join('');

  const executionResource = (e: FakeExecution) => {
    const completed =
      e.state === 'succeeded'
        ? { type: 'Completed', state: 'CONDITION_SUCCEEDED', message: 'Execution completed successfully.' }
        : e.state === 'failed'
          ? {
              type: 'Completed',
              state: 'CONDITION_FAILED',
              executionReason: 'NON_ZERO_EXIT_CODE',
              message: e.message ?? `Task ${e.id}-task0 failed.`,
            }
          : e.state === 'cancelled'
            ? {
                type: 'Completed',
                state: 'CONDITION_FAILED',
                executionReason: 'CANCELLED',
                message: 'The execution was cancelled.',
              }
            : { type: 'Completed', state: 'CONDITION_PENDING' };
    return {
      name: e.name,
      uid: e.uid,
      job: e.jobId,
      labels: e.labels,
      createTime: e.createTime,
      ...(e.startTime === undefined ? {} : { startTime: e.startTime }),
      ...(e.completionTime === undefined ? {} : { completionTime: e.completionTime }),
      taskCount: 1,
      parallelism: 1,
      runningCount: e.state === 'running' ? 1 : 0,
      succeededCount: e.state === 'succeeded' ? 1 : 0,
      failedCount: e.state === 'failed' ? 1 : 0,
      cancelledCount: e.state === 'cancelled' ? 1 : 0,
      retriedCount: 0,
      conditions: [{ ...completed, lastTransitionTime: e.completionTime ?? e.startTime ?? e.createTime }],
      logUri: `https://console.cloud.google.com/logs/viewer?project=${e.project}`,
      etag: `"${e.uid}"`,
    };
  };

  const completionStatus = (e: FakeExecution): string =>
    ({
      pending: 'EXECUTION_PENDING',
      running: 'EXECUTION_RUNNING',
      succeeded: 'EXECUTION_SUCCEEDED',
      failed: 'EXECUTION_FAILED',
      cancelled: 'EXECUTION_CANCELLED',
    })[e.state];

  const jobResource = (job: FakeJob) => {
    const latestName = job.executions.at(-1);
    const latest = latestName === undefined ? undefined : executions.get(latestName);
    return {
      ...job.body,
      name: job.name,
      uid: job.uid,
      generation: '1',
      observedGeneration: '1',
      createTime: job.createTime,
      executionCount: job.executions.length,
      ...(latest === undefined
        ? {}
        : {
            latestCreatedExecution: {
              name: latest.name,
              createTime: latest.createTime,
              ...(latest.completionTime === undefined ? {} : { completionTime: latest.completionTime }),
              completionStatus: completionStatus(latest),
            },
          }),
      terminalCondition: { type: 'Ready', state: 'CONDITION_SUCCEEDED' },
      etag: `"${job.uid}"`,
    };
  };

  const operationName = (project: string, region: string) =>
    `projects/${project}/locations/${region}/operations/${randomUUID()}`;

  const doneOperation = (project: string, region: string, type: string, resource: any) => {
    const name = operationName(project, region);
    const typed = { '@type': `${TYPE_PREFIX}${type}`, ...resource };
    const op = { name, done: true, metadata: typed, response: typed };
    operations.set(name, () => op);
    return op;
  };

  const findSecret = (ref: string): FakeSecret | undefined => {
    const id = /^projects\/[^/]+\/secrets\/([^/]+)$/.exec(ref)?.[1] ?? ref;
    return secrets.get(id);
  };

  const problem = (res: ServerResponse, p: HttpProblem, retryAfter?: string) => {
    res.writeHead(p.status, {
      'content-type': 'application/json; charset=UTF-8',
      ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }),
    });
    res.end(JSON.stringify({ error: { code: p.status, message: p.message, status: p.statusName } }));
  };

  const json = (res: ServerResponse, body: unknown, status = 200) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
    res.end(JSON.stringify(body));
  };

  type Handler = (m: RegExpExecArray, query: URLSearchParams, body: any) => unknown;
  const routes: { method: string; pattern: RegExp; action: FakeAction; handle: Handler }[] = [
    {
      method: 'POST',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs$/,
      action: 'createJob',
      handle: (m, query, body) => {
        const [, project, region] = m as unknown as [string, string, string];
        const id = query.get('jobId') ?? '';
        if (!JOB_ID.test(id)) throw new HttpProblem(400, `Invalid job id ${id}`);
        const name = `projects/${project}/locations/${region}/jobs/${id}`;
        if (jobs.has(name)) throw new HttpProblem(409, `Resource '${id}' already exists.`);
        const containers = body?.template?.template?.containers;
        if (
          !Array.isArray(containers) ||
          containers.length === 0 ||
          typeof containers[0]?.image !== 'string'
        ) {
          throw new HttpProblem(400, 'template.template.containers[0].image is required');
        }
        for (const env of containers.flatMap((c: any) => c.env ?? [])) {
          const sources = ['value', 'valueSource'].filter((k) => env[k] !== undefined);
          if (sources.length > 1)
            throw new HttpProblem(400, `env ${env.name}: value and valueSource are exclusive`);
          if (typeof env.value === 'string' && Buffer.byteLength(env.value) > ENV_VALUE_MAX) {
            throw new HttpProblem(400, `env ${env.name}: value is longer than ${ENV_VALUE_MAX} bytes`);
          }
        }
        const job: FakeJob = {
          name,
          project,
          region,
          id,
          uid: randomUUID(),
          body,
          createTime: now(),
          executions: [],
        };
        jobs.set(name, job);
        return doneOperation(project, region, 'Job', jobResource(job));
      },
    },
    {
      method: 'GET',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/:]+)$/,
      action: 'getJob',
      handle: (m) => {
        const job = jobs.get(m[0].slice('/v2/'.length));
        if (job === undefined) throw new HttpProblem(404, `Resource '${m[3]}' was not found`);
        return jobResource(job);
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/:]+)$/,
      action: 'deleteJob',
      handle: (m) => {
        const name = m[0].slice('/v2/'.length);
        const job = jobs.get(name);
        if (job === undefined) throw new HttpProblem(404, `Resource '${m[3]}' was not found`);
        const resource = jobResource(job);
        jobs.delete(name);
        for (const e of job.executions) {
          operations.delete(executions.get(e)?.operation ?? '');
          executions.delete(e);
        }
        return doneOperation(job.project, job.region, 'Job', resource);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/:]+):run$/,
      action: 'runJob',
      handle: (m, _query, body) => {
        const name = m[0].slice('/v2/'.length, -':run'.length);
        const job = jobs.get(name);
        if (job === undefined) throw new HttpProblem(404, `Resource '${m[3]}' was not found`);
        if (body?.overrides !== undefined)
          throw new HttpProblem(400, 'overrides are not supported by the fake');
        const id = `${job.id}-${random5()}`;
        const e: FakeExecution = {
          name: `${name}/executions/${id}`,
          id,
          jobId: job.id,
          project: job.project,
          region: job.region,
          uid: randomUUID(),
          createTime: now(),
          labels: {
            ...(job.body?.template?.labels ?? {}),
            'run.googleapis.com/execution-environment': 'gen2',
          },
          operation: operationName(job.project, job.region),
          state: 'pending',
          cancelRequests: 0,
        };
        // The task cannot start when a referenced secret has no version (Cloud Run reports it on the execution).
        const refs = (job.body.template.template.containers as any[])
          .flatMap((c) => c.env ?? [])
          .map((env: any) => env.valueSource?.secretKeyRef?.secret)
          .filter((s: unknown): s is string => typeof s === 'string');
        const unusable = refs.find((ref) => (findSecret(ref)?.versions.length ?? 0) === 0);
        if (unusable !== undefined) {
          e.state = 'failed';
          e.completionTime = now();
          e.message = `Secret ${unusable} has no accessible version.`;
        }
        executions.set(e.name, e);
        job.executions.push(e.name);
        const op = () => {
          const resource = { '@type': `${TYPE_PREFIX}Execution`, ...executionResource(e) };
          const finished = ['succeeded', 'failed', 'cancelled'].includes(e.state);
          return {
            name: e.operation,
            done: finished,
            metadata: resource,
            ...(finished ? { response: resource } : {}),
          };
        };
        operations.set(e.operation, op);
        return op();
      },
    },
    {
      method: 'GET',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/]+)\/executions\/([^/:]+)$/,
      action: 'getExecution',
      handle: (m) => {
        const e = executions.get(m[0].slice('/v2/'.length));
        if (e === undefined) throw new HttpProblem(404, `Resource '${m[4]}' was not found`);
        return executionResource(e);
      },
    },
    {
      method: 'POST',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/]+)\/executions\/([^/:]+):cancel$/,
      action: 'cancelExecution',
      handle: (m) => {
        const e = executions.get(m[0].slice('/v2/'.length, -':cancel'.length));
        if (e === undefined) throw new HttpProblem(404, `Resource '${m[4]}' was not found`);
        if (e.state !== 'pending' && e.state !== 'running') {
          throw new HttpProblem(400, `Execution ${e.id} has already completed.`, 'FAILED_PRECONDITION');
        }
        e.cancelRequests += 1;
        e.state = 'cancelled';
        e.completionTime = now();
        return operations.get(e.operation)!();
      },
    },
    {
      method: 'GET',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/jobs\/([^/]+)\/executions\/([^/]+)\/tasks$/,
      action: 'listTasks',
      handle: (m) => {
        const e = executions.get(m[0].slice('/v2/'.length, -'/tasks'.length));
        if (e === undefined) throw new HttpProblem(404, `Resource '${m[4]}' was not found`);
        const finished = e.state === 'succeeded' || e.state === 'failed';
        return {
          tasks: [
            {
              name: `${e.name}/tasks/${e.id}-task0`,
              job: e.jobId,
              execution: e.id,
              index: 0,
              retried: 0,
              ...(finished
                ? {
                    lastAttemptResult: {
                      exitCode: e.exitCode ?? 0,
                      ...(e.state === 'failed'
                        ? { status: { code: 2, message: e.message ?? 'The container exited with an error.' } }
                        : {}),
                    },
                  }
                : {}),
            },
          ],
        };
      },
    },
    {
      method: 'GET',
      pattern: /^\/v2\/projects\/([^/]+)\/locations\/([^/]+)\/operations\/([^/]+)$/,
      action: 'getOperation',
      handle: (m) => {
        const op = operations.get(m[0].slice('/v2/'.length));
        if (op === undefined) throw new HttpProblem(404, `Operation ${m[3]} was not found`);
        return op();
      },
    },
    {
      method: 'POST',
      pattern: /^\/v2\/entries:list$/,
      action: 'listLogEntries',
      handle: (_m, _query, body) => {
        const projects = ((body?.resourceNames ?? []) as string[]).map(
          (r) => /^projects\/([^/]+)$/.exec(r)?.[1],
        );
        if (projects.length === 0 || projects.some((p) => p === undefined)) {
          throw new HttpProblem(400, 'resourceNames must name projects/<id>');
        }
        const orderBy = body?.orderBy ?? 'timestamp asc';
        if (orderBy !== 'timestamp asc' && orderBy !== 'timestamp desc') {
          throw new HttpProblem(400, `orderBy ${orderBy} is not supported`);
        }
        const pageSize = Math.min(Number(body?.pageSize ?? LOG_PAGE_DEFAULT), LOG_PAGE_MAX);
        const predicate = parseFilter(String(body?.filter ?? ''));
        const matching = entries
          .filter((e) => projects.includes(e.project) && predicate(e))
          .sort((a, b) => {
            const ka = timeKey(a.timestamp);
            const kb = timeKey(b.timestamp);
            const order =
              ka < kb ? -1 : ka > kb ? 1 : a.insertId < b.insertId ? -1 : a.insertId > b.insertId ? 1 : 0;
            return orderBy === 'timestamp asc' ? order : -order;
          });
        const offset =
          body?.pageToken === undefined ? 0 : Number(Buffer.from(body.pageToken, 'base64url').toString());
        const page = matching.slice(offset, offset + pageSize);
        const next = offset + page.length < matching.length ? offset + page.length : undefined;
        return {
          entries: page.map(({ project: _project, ...entry }) => ({
            ...entry,
            receiveTimestamp: entry.timestamp,
          })),
          ...(next === undefined ? {} : { nextPageToken: Buffer.from(String(next)).toString('base64url') }),
        };
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/projects\/([^/]+)\/secrets$/,
      action: 'createSecret',
      handle: (m, query, body) => {
        const id = query.get('secretId') ?? '';
        if (!SECRET_ID.test(id)) throw new HttpProblem(400, `Invalid secret id ${id}`);
        if (body?.replication?.automatic === undefined && body?.replication?.userManaged === undefined) {
          throw new HttpProblem(400, 'Secret.replication is required');
        }
        if (secrets.has(id))
          throw new HttpProblem(409, `Secret [projects/${m[1]}/secrets/${id}] already exists.`);
        secrets.set(id, { labels: { ...(body?.labels ?? {}) }, versions: [] });
        return {
          name: `projects/${m[1]}/secrets/${id}`,
          replication: body.replication,
          labels: body.labels ?? {},
        };
      },
    },
    {
      method: 'GET',
      pattern: /^\/v1\/projects\/([^/]+)\/secrets$/,
      action: 'listSecrets',
      handle: (m, query) => {
        const filter = query.get('filter') ?? '';
        const label = /^labels\.([a-z0-9_-]+)=([a-z0-9_-]+)$/.exec(filter);
        if (filter !== '' && label === null)
          throw new HttpProblem(400, `Filter ${filter} is not supported by the fake`);
        const ids = [...secrets.entries()]
          .filter(([, s]) => label === null || s.labels[label[1]!] === label[2])
          .map(([id]) => id)
          .sort();
        const pageSize = Number(query.get('pageSize') ?? 25);
        const offset = Number(query.get('pageToken') ?? 0);
        const page = ids.slice(offset, offset + pageSize);
        const next = offset + page.length < ids.length ? String(offset + page.length) : undefined;
        return {
          secrets: page.map((id) => ({
            name: `projects/${m[1]}/secrets/${id}`,
            labels: secrets.get(id)?.labels,
          })),
          totalSize: ids.length,
          ...(next === undefined ? {} : { nextPageToken: next }),
        };
      },
    },
    {
      method: 'POST',
      pattern: /^\/v1\/projects\/([^/]+)\/secrets\/([^/:]+):addVersion$/,
      action: 'addSecretVersion',
      handle: (m, _query, body) => {
        const secret = secrets.get(m[2]!);
        if (secret === undefined)
          throw new HttpProblem(404, `Secret [projects/${m[1]}/secrets/${m[2]}] not found.`);
        const data = body?.payload?.data;
        if (typeof data !== 'string') throw new HttpProblem(400, 'payload.data is required');
        secret.versions.push(Buffer.from(data, 'base64').toString('utf8'));
        return {
          name: `projects/${m[1]}/secrets/${m[2]}/versions/${secret.versions.length}`,
          state: 'ENABLED',
          createTime: now(),
        };
      },
    },
    {
      method: 'DELETE',
      pattern: /^\/v1\/projects\/([^/]+)\/secrets\/([^/:]+)$/,
      action: 'deleteSecret',
      handle: (m) => {
        if (!secrets.delete(m[2]!))
          throw new HttpProblem(404, `Secret [projects/${m[1]}/secrets/${m[2]}] not found.`);
        return {};
      },
    },
  ];

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const path = decodeURIComponent(url.pathname);
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = v;
    const route = routes.find((r) => r.method === req.method && r.pattern.test(path));
    requests.push({
      action: route?.action ?? 'unknown',
      method: req.method ?? '?',
      path,
      query,
      headers: { ...req.headers },
      body: raw,
    });
    if (req.headers.authorization !== `Bearer ${token}`) {
      problem(res, new HttpProblem(401, 'Request had invalid authentication credentials.'));
      return;
    }
    if (route === undefined) {
      problem(res, new HttpProblem(400, `unsupportedByFake: ${req.method} ${path}`));
      return;
    }
    const queue = failures.get(route.action) ?? [];
    let failure = queue[0];
    if (failure !== undefined && (failure.skip ?? 0) > 0) {
      queue[0] = { ...failure, skip: (failure.skip ?? 0) - 1 };
      failure = undefined;
    } else if (failure !== undefined) {
      const left = (failure.times ?? 1) - 1;
      if (left <= 0) queue.shift();
      else queue[0] = { ...failure, times: left };
    }
    const fail = (f: InjectedFailure) =>
      problem(
        res,
        new HttpProblem(
          f.status,
          `${f.message ?? 'Injected failure'}${f.echoBody === true ? `; request was ${raw}` : ''}`,
          f.statusName ?? STATUS_NAMES[f.status] ?? 'UNKNOWN',
        ),
        f.retryAfter,
      );
    if (failure !== undefined && failure.afterEffect !== true) {
      fail(failure);
      return;
    }
    try {
      const body = raw === '' ? undefined : JSON.parse(raw);
      const answer = route.handle(route.pattern.exec(path)!, url.searchParams, body);
      if (failure !== undefined) fail(failure);
      else json(res, answer);
    } catch (error) {
      if (error instanceof HttpProblem) problem(res, error);
      else problem(res, new HttpProblem(500, `fake failed: ${(error as Error).message}`));
    }
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const execution = (name: string): FakeExecution => {
    const e = executions.get(name);
    if (e === undefined) throw new Error(`fake: no execution ${name}`);
    return e;
  };

  return {
    endpoint: `http://127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    token,
    requests,
    jobIds: () => [...jobs.values()].map((j) => j.id).sort(),
    jobBody: (jobId) => [...jobs.values()].find((j) => j.id === jobId)?.body,
    executions: (jobId) =>
      [...executions.values()]
        .filter((e) => jobId === undefined || e.jobId === jobId)
        .map((e) => ({ name: e.name, jobId: e.jobId, state: e.state, cancelRequests: e.cancelRequests })),
    secretIds: () => [...secrets.keys()].sort(),
    secretVersions: (id) => [...(secrets.get(id)?.versions ?? [])],
    secretLabels: (id) => secrets.get(id)?.labels,
    seedSecret: (id, value) => {
      secrets.set(id, { labels: {}, versions: [value] });
    },
    startExecution: (name) => {
      const e = execution(name);
      if (e.state !== 'pending') throw new Error(`fake: execution ${name} is ${e.state}, not pending`);
      e.state = 'running';
      e.startTime = now();
    },
    succeedExecution: (name) => {
      const e = execution(name);
      if (e.state !== 'running') throw new Error(`fake: execution ${name} is ${e.state}, not running`);
      e.state = 'succeeded';
      e.exitCode = 0;
      e.completionTime = now();
    },
    failExecution: (name, result) => {
      const e = execution(name);
      if (e.state !== 'running') throw new Error(`fake: execution ${name} is ${e.state}, not running`);
      e.state = 'failed';
      e.exitCode = result.exitCode;
      e.completionTime = now();
      if (result.message !== undefined) e.message = result.message;
    },
    appendLog: (executionName, input) => {
      const e = execution(executionName);
      const stream = input.stream ?? 'stdout';
      const logId =
        stream === 'system' ? 'run.googleapis.com%2Fvarlog%2Fsystem' : `run.googleapis.com%2F${stream}`;
      insertCounter += 1;
      entries.push({
        logName: `projects/${e.project}/logs/${logId}`,
        project: e.project,
        resource: {
          type: 'cloud_run_job',
          labels: { project_id: e.project, job_name: e.jobId, location: e.region },
        },
        labels: {
          'run.googleapis.com/execution_name': e.id,
          'run.googleapis.com/task_index': '0',
          'run.googleapis.com/task_attempt': '0',
        },
        timestamp: input.timestamp ?? now(),
        insertId: input.insertId ?? `i${String(insertCounter).padStart(8, '0')}`,
        ...(input.json === undefined ? { textPayload: input.text ?? '' } : { jsonPayload: input.json }),
      });
    },
    failNext: (action, failure) => {
      failures.set(action, [...(failures.get(action) ?? []), failure]);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        // The clients keep connections alive; do not wait for them to time out.
        server.closeAllConnections();
      }),
  };
}
