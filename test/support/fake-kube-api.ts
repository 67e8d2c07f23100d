import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { testTls } from './tls.ts';

/**
 * A loopback HTTPS fake of the Kubernetes core/v1 API subset the Kubernetes
 * launcher uses, written from the public API reference:
 *
 * - pods, secrets, configmaps in a namespace: create `POST /api/v1/namespaces/{ns}/{resource}`,
 *   get `GET …/{resource}/{name}`, list `GET …/{resource}?labelSelector=`,
 *   delete `DELETE …/{resource}/{name}?gracePeriodSeconds=`,
 *   deletecollection `DELETE …/{resource}?labelSelector=`;
 * - pod log `GET …/pods/{name}/log?container&timestamps&sinceTime&limitBytes&follow`,
 *   with `follow=true` streamed chunk by chunk as the test appends lines.
 *
 * Errors are `Status` objects (`kind: Status`, `reason`, `message`, `code`)
 * as the API server sends them. Requests need `Authorization: Bearer <token>`.
 * Every request is recorded (method, path, query, raw body, status) before it
 * is answered, for canary checks and for deriving RBAC verbs. A route the fake
 * does not know answers 400 `UnsupportedByFake` and is listed in
 * `unsupported`, so a new call fails loudly. Faults (429 with Retry-After,
 * 500) can be queued per method and path.
 *
 * The test drives pod status itself (no scheduler, no kubelet): `setWaiting`,
 * `start`, `finish`. Where the fake differs from a real API server is listed
 * at the top of test/integration/kubernetes-launcher.test.ts.
 *
 * @example
 * const api = await startFakeKubeApi({ namespace: 'remote-worker' });
 * writeFileSync(path, api.kubeconfig());
 * api.start('rw-…'); api.appendLog('rw-…', ['PLAY [all]']); api.finish('rw-…', { exitCode: 0 });
 */

export type Resource = 'pods' | 'secrets' | 'configmaps';

export interface RecordedKubeRequest {
  readonly method: string;
  /** Path without the query, e.g. `/api/v1/namespaces/remote-worker/pods/rw-1/log`. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  /** The request body exactly as sent. */
  readonly body: string;
  readonly authorized: boolean;
  /** The status the fake answered. */
  status: number;
}

export interface InjectedFault {
  readonly method?: string;
  /** Matched against the path (no query). */
  readonly path?: RegExp;
  readonly status: number;
  /** `Retry-After` header, seconds. */
  readonly retryAfter?: number;
  /** How many matching requests fail; default 1. */
  times?: number;
  /** Put the request body into the Status message, as some validation errors quote the input. */
  readonly echoBody?: boolean;
}

interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: unknown[];
    [key: string]: unknown;
  };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  status?: PodStatus;
  [key: string]: unknown;
}

interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: {
    exitCode: number;
    reason?: string;
    message?: string;
    startedAt?: string;
    finishedAt: string;
  };
}

interface PodStatus {
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  reason?: string;
  message?: string;
  startTime?: string;
  containerStatuses?: {
    name: string;
    state: ContainerState;
    ready: boolean;
    restartCount: number;
    image: string;
    imageID: string;
  }[];
}

interface LogEntry {
  readonly ts: string;
  readonly text: string;
  /** Still being written: no newline yet. */
  open: boolean;
}

export interface FakeKubeApi {
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  readonly token: string;
  readonly namespace: string;
  readonly requests: RecordedKubeRequest[];
  /** Requests to routes the fake does not implement. */
  readonly unsupported: RecordedKubeRequest[];
  /** A kubeconfig (YAML) for this server: the test CA in `certificate-authority-data`, a bearer token. */
  kubeconfig(options?: { token?: string }): string;
  /** Names of the stored objects of a kind, sorted. */
  names(resource: Resource): string[];
  get(resource: Resource, name: string): KubeObject | undefined;
  /** Store an object directly (not through the API), to arrange a test. */
  seed(resource: Resource, object: KubeObject): void;
  /** Delete an object directly (not through the API): a crash half-way, someone else's kubectl. */
  remove(resource: Resource, name: string): void;
  /** The pod was scheduled and its container waits (`ContainerCreating`, `ImagePullBackOff` …). */
  setWaiting(pod: string, reason: string, options?: { message?: string; startTime?: string }): void;
  /** The container runs. */
  start(pod: string): void;
  /** Log lines the container writes now; `ts` gives them all one timestamp, `open` leaves the last unterminated. */
  appendLog(pod: string, lines: readonly string[], options?: { ts?: string; open?: boolean }): void;
  /** The container ended: Succeeded with exit 0 and no pod reason, else Failed. Follow streams end. */
  finish(
    pod: string,
    outcome: {
      exitCode?: number;
      reason?: string;
      podReason?: string;
      podMessage?: string;
      message?: string;
    },
  ): void;
  /** Queue a fault for the next matching requests. */
  fail(fault: InjectedFault): void;
  /** Open follow streams right now (for tests that wait for one). */
  followers(pod: string): number;
  close(): Promise<void>;
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const LABEL_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;
const MAX_OBJECT_DATA = 1024 * 1024;
const KIND: Readonly<Record<Resource, string>> = { pods: 'Pod', secrets: 'Secret', configmaps: 'ConfigMap' };

/** Go's RFC3339Nano: nanoseconds with trailing zeros dropped. */
function rfc3339Nano(nanos: bigint): string {
  const ms = nanos / 1_000_000n;
  const base = new Date(Number(ms)).toISOString().slice(0, 19);
  const fraction = (nanos % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${base}${fraction === '' ? '' : `.${fraction}`}Z`;
}

const nowSeconds = (): string => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function parseTs(ts: string): bigint {
  const match = /^(.{19})(?:\.(\d{1,9}))?Z$/.exec(ts);
  if (match === null) throw new Error(`fake: bad timestamp ${ts}`);
  return BigInt(Date.parse(`${match[1]}Z`)) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

type Selector = (labels: Readonly<Record<string, string>>) => boolean;

/** Equality-based selectors only (`a=b`, `a==b`, `a!=b`, `a`, `!a`); set-based ones are not implemented. */
function parseSelector(text: string | undefined): Selector | 'unsupported' {
  if (text === undefined || text.trim() === '') return () => true;
  const tests: Selector[] = [];
  for (const term of text.split(',').map((t) => t.trim())) {
    const notEqual = /^([^=!\s]+)\s*!=\s*(\S*)$/.exec(term);
    const equal = /^([^=!\s]+)\s*==?\s*(\S*)$/.exec(term);
    const absent = /^!([^=!\s]+)$/.exec(term);
    if (notEqual !== null) {
      const [, key = '', value = ''] = notEqual;
      tests.push((labels) => labels[key] !== value);
    } else if (equal !== null) {
      const [, key = '', value = ''] = equal;
      tests.push((labels) => labels[key] === value);
    } else if (absent !== null) {
      const key = absent[1] ?? '';
      tests.push((labels) => !(key in labels));
    } else if (/^[^=!\s()]+$/.test(term)) {
      tests.push((labels) => term in labels);
    } else {
      return 'unsupported';
    }
  }
  return (labels) => tests.every((t) => t(labels));
}

export async function startFakeKubeApi(
  options: { namespace?: string; token?: string } = {},
): Promise<FakeKubeApi> {
  const tls = testTls();
  const namespace = options.namespace ?? 'remote-worker';
  const token = options.token ?? `fake-token-${randomUUID()}`;
  const store: Record<Resource, Map<string, KubeObject>> = {
    pods: new Map(),
    secrets: new Map(),
    configmaps: new Map(),
  };
  const logs = new Map<string, LogEntry[]>();
  const follows = new Map<string, Set<{ res: ServerResponse; timestamps: boolean; since: bigint }>>();
  const requests: RecordedKubeRequest[] = [];
  const unsupported: RecordedKubeRequest[] = [];
  const faults: InjectedFault[] = [];
  let resourceVersion = 1000;
  let lastLogNanos = 0n;

  const status = (code: number, reason: string, message: string, details?: Record<string, unknown>) => ({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details === undefined ? {} : { details }),
    code,
  });

  const send = (
    record: RecordedKubeRequest,
    res: ServerResponse,
    code: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    record.status = code;
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const pod = (name: string): KubeObject => {
    const p = store.pods.get(name);
    if (p === undefined) throw new Error(`fake: no pod ${name}`);
    return p;
  };

  const containerStatus = (p: KubeObject, state: ContainerState) => {
    const container = (p.spec?.containers as { name: string; image: string }[] | undefined)?.[0];
    return {
      name: container?.name ?? 'runner',
      state,
      ready: state.running !== undefined,
      restartCount: 0,
      image: container?.image ?? '',
      imageID: '',
    };
  };

  const started = (p: KubeObject): boolean => {
    const state = p.status?.containerStatuses?.[0]?.state;
    return state?.running !== undefined || state?.terminated !== undefined;
  };

  const ended = (p: KubeObject): boolean => p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed';

  const formatEntry = (entry: LogEntry, timestamps: boolean): string =>
    timestamps ? `${entry.ts} ${entry.text}` : entry.text;

  const endFollowers = (name: string) => {
    for (const f of follows.get(name) ?? []) {
      for (const entry of logs.get(name) ?? []) {
        // The tail of a container that ended is written as it is.
        if (entry.open && parseTs(entry.ts) >= f.since) f.res.write(formatEntry(entry, f.timestamps));
      }
      f.res.end();
    }
    follows.delete(name);
  };

  const validate = (resource: Resource, body: KubeObject): string | undefined => {
    const name = body.metadata?.name;
    if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name) || name.length > 253) {
      return `metadata.name: Invalid value: "${String(name)}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`;
    }
    if (resource === 'pods' && name.length > 63)
      return `metadata.name: Invalid value: must be no more than 63 characters`;
    for (const [key, value] of Object.entries(body.metadata.labels ?? {})) {
      if (!LABEL_NAME.test(key))
        return `metadata.labels: Invalid value: "${key}": name part must consist of alphanumeric characters`;
      if (typeof value !== 'string' || value.length > 63 || !LABEL_VALUE.test(value)) {
        return `metadata.labels: Invalid value: "${String(value)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`;
      }
    }
    if (resource === 'secrets' || resource === 'configmaps') {
      let size = 0;
      for (const [key, value] of Object.entries(body.data ?? {})) {
        if (!SECRET_KEY.test(key))
          return `data[${key}]: Invalid value: "${key}": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`;
        if (resource === 'secrets' && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
          return `data[${key}]: Invalid value: illegal base64 data`;
        }
        size += resource === 'secrets' ? Buffer.from(value, 'base64').length : Buffer.byteLength(value);
      }
      if (size > MAX_OBJECT_DATA) return `data: Too long: must have at most ${MAX_OBJECT_DATA} bytes`;
    }
    return undefined;
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const url = new URL(req.url ?? '/', 'https://fake');
    const query = Object.fromEntries(url.searchParams);
    const method = req.method ?? 'GET';
    const authorized = req.headers.authorization === `Bearer ${token}`;
    const record: RecordedKubeRequest = {
      method,
      path: url.pathname,
      query,
      body: raw,
      authorized,
      status: 0,
    };
    requests.push(record);

    if (!authorized) return send(record, res, 401, status(401, 'Unauthorized', 'Unauthorized'));

    const fault = faults.find(
      (f) =>
        (f.method === undefined || f.method === method) &&
        (f.path === undefined || f.path.test(url.pathname)),
    );
    if (fault !== undefined) {
      fault.times = (fault.times ?? 1) - 1;
      if (fault.times <= 0) faults.splice(faults.indexOf(fault), 1);
      const reason =
        fault.status === 429 ? 'TooManyRequests' : fault.status >= 500 ? 'InternalError' : 'Invalid';
      const message =
        fault.echoBody === true
          ? `the object provided is unacceptable: ${raw}`
          : fault.status === 429
            ? 'the server has received too many requests and has asked us to try again later'
            : 'an error on the server ("injected") has prevented the request from succeeding';
      return send(
        record,
        res,
        fault.status,
        status(fault.status, reason, message),
        fault.retryAfter === undefined ? {} : { 'retry-after': String(fault.retryAfter) },
      );
    }

    const match = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|secrets|configmaps)(?:\/([^/]+))?(\/log)?$/.exec(
      url.pathname,
    );
    const unknown = () => {
      unsupported.push(record);
      send(
        record,
        res,
        400,
        status(400, 'UnsupportedByFake', `${method} ${url.pathname} is not implemented by the fake`),
      );
    };
    if (match === null) return unknown();
    const [, ns = '', resource = 'pods', name, log] = match as unknown as [
      string,
      string,
      Resource,
      string?,
      string?,
    ];
    const objects = store[resource];
    const kind = KIND[resource];
    const singular = resource.slice(0, -1);

    if (log !== undefined) {
      if (method !== 'GET' || resource !== 'pods' || name === undefined) return unknown();
      const p = ns === namespace ? objects.get(name) : undefined;
      if (p === undefined) return send(record, res, 404, status(404, 'NotFound', `pods "${name}" not found`));
      const container = (p.spec?.containers as { name: string }[] | undefined)?.[0]?.name ?? 'runner';
      if (query.container !== undefined && query.container !== container) {
        return send(
          record,
          res,
          400,
          status(400, 'BadRequest', `container ${query.container} is not valid for pod ${name}`),
        );
      }
      if (!started(p)) {
        const waiting = p.status?.containerStatuses?.[0]?.state.waiting?.reason ?? 'ContainerCreating';
        return send(
          record,
          res,
          400,
          status(
            400,
            'BadRequest',
            `container "${container}" in pod "${name}" is waiting to start: ${waiting}`,
          ),
        );
      }
      const timestamps = query.timestamps === 'true';
      // The API takes sinceTime to the second.
      const since =
        query.sinceTime === undefined
          ? 0n
          : (parseTs(query.sinceTime.replace(/\.\d+Z$/, 'Z')) / 1_000_000_000n) * 1_000_000_000n;
      const entries = (logs.get(name) ?? []).filter((e) => parseTs(e.ts) >= since);
      const follow = query.follow === 'true';
      let text = '';
      for (const entry of entries) {
        if (entry.open && (follow || !ended(p))) {
          // A line still being written: the plain read shows it as far as it goes; follow waits for the rest.
          if (!follow) text += formatEntry(entry, timestamps);
          break;
        }
        text += `${formatEntry(entry, timestamps)}${entry.open ? '' : '\n'}`;
      }
      const limit = query.limitBytes === undefined ? undefined : Number(query.limitBytes);
      let out = Buffer.from(text, 'utf8');
      if (limit !== undefined && out.length > limit) out = out.subarray(0, limit);
      record.status = 200;
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (!follow || ended(p)) {
        res.end(out);
        return;
      }
      res.write(out);
      const follower = { res, timestamps, since };
      const set = follows.get(name) ?? new Set();
      set.add(follower);
      follows.set(name, set);
      res.on('close', () => set.delete(follower));
      return;
    }

    if (method === 'POST' && name === undefined) {
      let body: KubeObject;
      try {
        body = JSON.parse(raw) as KubeObject;
      } catch {
        return send(
          record,
          res,
          400,
          status(400, 'BadRequest', 'the body of the request was in an unknown format'),
        );
      }
      if (ns !== namespace)
        return send(record, res, 404, status(404, 'NotFound', `namespaces "${ns}" not found`));
      const invalid = validate(resource, body);
      if (invalid !== undefined) {
        return send(
          record,
          res,
          422,
          status(422, 'Invalid', `${kind} "${body.metadata?.name}" is invalid: ${invalid}`),
        );
      }
      if (objects.has(body.metadata.name)) {
        return send(
          record,
          res,
          409,
          status(409, 'AlreadyExists', `${resource} "${body.metadata.name}" already exists`, {
            name: body.metadata.name,
            kind: resource,
          }),
        );
      }
      resourceVersion += 1;
      const stored: KubeObject = {
        ...body,
        apiVersion: 'v1',
        kind,
        metadata: {
          ...body.metadata,
          namespace: ns,
          uid: randomUUID(),
          resourceVersion: String(resourceVersion),
          creationTimestamp: nowSeconds(),
        },
        ...(resource === 'pods' ? { status: { phase: 'Pending' } as PodStatus } : {}),
      };
      objects.set(stored.metadata.name, stored);
      if (resource === 'pods') logs.set(stored.metadata.name, []);
      return send(record, res, 201, stored);
    }

    if (method === 'GET' && name !== undefined) {
      const found = ns === namespace ? objects.get(name) : undefined;
      if (found === undefined)
        return send(record, res, 404, status(404, 'NotFound', `${resource} "${name}" not found`));
      return send(record, res, 200, found);
    }

    if ((method === 'GET' || method === 'DELETE') && name === undefined) {
      const selector = parseSelector(query.labelSelector);
      if (selector === 'unsupported') return unknown();
      const items =
        ns === namespace ? [...objects.values()].filter((o) => selector(o.metadata.labels ?? {})) : [];
      if (method === 'DELETE') {
        for (const item of items) {
          objects.delete(item.metadata.name);
          if (resource === 'pods') endFollowers(item.metadata.name);
        }
      }
      resourceVersion += 1;
      return send(record, res, 200, {
        kind: `${kind}List`,
        apiVersion: 'v1',
        metadata: { resourceVersion: String(resourceVersion) },
        items,
      });
    }

    if (method === 'DELETE' && name !== undefined) {
      const found = ns === namespace ? objects.get(name) : undefined;
      if (found === undefined)
        return send(record, res, 404, status(404, 'NotFound', `${resource} "${name}" not found`));
      objects.delete(name);
      if (resource === 'pods') endFollowers(name);
      return send(
        record,
        res,
        200,
        resource === 'pods'
          ? found
          : { kind: 'Status', apiVersion: 'v1', status: 'Success', details: { name, kind: singular } },
      );
    }
    return unknown();
  };

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status(500, 'InternalError', `fake failed: ${String(error)}`)));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const url = `https://127.0.0.1:${port}`;

  return {
    server: url,
    token,
    namespace,
    requests,
    unsupported,
    kubeconfig: (o = {}) =>
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '  - name: fake',
        '    cluster:',
        `      server: ${url}`,
        `      certificate-authority-data: ${Buffer.from(tls.ca, 'utf8').toString('base64')}`,
        'users:',
        '  - name: remote-worker',
        '    user:',
        `      token: ${o.token ?? token}`,
        'contexts:',
        '  - name: fake',
        '    context:',
        '      cluster: fake',
        '      user: remote-worker',
        `      namespace: ${namespace}`,
        'current-context: fake',
        '',
      ].join('\n'),
    names: (resource) => [...store[resource].keys()].sort(),
    get: (resource, name) => store[resource].get(name),
    seed: (resource, object) => {
      resourceVersion += 1;
      store[resource].set(object.metadata.name, {
        apiVersion: 'v1',
        kind: KIND[resource],
        ...object,
        metadata: {
          namespace,
          uid: randomUUID(),
          resourceVersion: String(resourceVersion),
          creationTimestamp: nowSeconds(),
          ...object.metadata,
        },
      });
      if (resource === 'pods' && !logs.has(object.metadata.name)) logs.set(object.metadata.name, []);
    },
    remove: (resource, name) => {
      if (!store[resource].delete(name)) throw new Error(`fake: no ${resource}/${name}`);
      if (resource === 'pods') endFollowers(name);
    },
    setWaiting: (name, reason, o = {}) => {
      const p = pod(name);
      p.status = {
        phase: 'Pending',
        startTime: o.startTime ?? p.status?.startTime ?? nowSeconds(),
        containerStatuses: [
          containerStatus(p, {
            waiting: { reason, ...(o.message === undefined ? {} : { message: o.message }) },
          }),
        ],
      };
    },
    start: (name) => {
      const p = pod(name);
      const at = nowSeconds();
      p.status = {
        phase: 'Running',
        startTime: p.status?.startTime ?? at,
        containerStatuses: [containerStatus(p, { running: { startedAt: at } })],
      };
    },
    appendLog: (name, lines, o = {}) => {
      const entries = logs.get(name);
      if (entries === undefined) throw new Error(`fake: no pod ${name}`);
      const last = entries.at(-1);
      const fresh: LogEntry[] = [];
      if (last?.open) {
        last.open = false;
        fresh.push(last);
      }
      for (const [i, text] of lines.entries()) {
        let ts = o.ts;
        if (ts !== undefined) {
          const at = parseTs(ts);
          if (at > lastLogNanos) lastLogNanos = at;
        } else {
          // Real time, strictly increasing like a container runtime's clock for one stream.
          const now = BigInt(Date.now()) * 1_000_000n;
          lastLogNanos = now > lastLogNanos ? now : lastLogNanos + 1000n;
          ts = rfc3339Nano(lastLogNanos);
        }
        const entry: LogEntry = { ts, text, open: o.open === true && i === lines.length - 1 };
        entries.push(entry);
        fresh.push(entry);
      }
      for (const f of follows.get(name) ?? []) {
        for (const entry of fresh) {
          if (!entry.open && parseTs(entry.ts) >= f.since)
            f.res.write(`${formatEntry(entry, f.timestamps)}\n`);
        }
      }
    },
    finish: (name, outcome) => {
      const p = pod(name);
      const at = nowSeconds();
      const exitCode = outcome.exitCode;
      const state: ContainerState =
        exitCode === undefined
          ? {}
          : {
              terminated: {
                exitCode,
                reason: outcome.reason ?? (exitCode === 0 ? 'Completed' : 'Error'),
                ...(outcome.message === undefined ? {} : { message: outcome.message }),
                startedAt: p.status?.startTime ?? at,
                finishedAt: at,
              },
            };
      p.status = {
        phase: exitCode === 0 && outcome.podReason === undefined ? 'Succeeded' : 'Failed',
        startTime: p.status?.startTime ?? at,
        ...(outcome.podReason === undefined ? {} : { reason: outcome.podReason }),
        ...(outcome.podMessage === undefined ? {} : { message: outcome.podMessage }),
        containerStatuses:
          exitCode === undefined ? (p.status?.containerStatuses ?? []) : [containerStatus(p, state)],
      };
      endFollowers(name);
    },
    fail: (fault) => {
      faults.push({ ...fault, times: fault.times ?? 1 });
    },
    followers: (name) => follows.get(name)?.size ?? 0,
    close: async () => {
      for (const name of [...follows.keys()]) endFollowers(name);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
