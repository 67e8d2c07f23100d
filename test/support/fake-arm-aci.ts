import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { testTls } from './tls.ts';

/**
 * A loopback fake of the Azure Resource Manager calls the ACI launcher makes,
 * written from the public REST reference of Microsoft.ContainerInstance
 * (api-version 2023-05-01, what `@azure/arm-containerinstance` 9.1 sends):
 *
 * - Container Groups - Get             `GET    …/containerGroups/{name}`
 * - Container Groups - Create Or Update `PUT    …/containerGroups/{name}`
 * - Container Groups - Delete          `DELETE …/containerGroups/{name}`
 * - Container Groups - Stop            `POST   …/containerGroups/{name}/stop`
 * - Containers - List Logs             `GET    …/containerGroups/{name}/containers/{container}/logs?tail&timestamps`
 *
 * where `…` is `/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.ContainerInstance`.
 * It serves https with the test CA (`testTls()`), because the SDK's bearer
 * policy refuses plain http, and checks the bearer token. Every request is
 * recorded raw (method, path, query, headers, body) before it is answered,
 * so a test can look for a secret anywhere it might leak. Anything else
 * answers 400 `UnsupportedByFake`, so a new call fails loudly.
 *
 * Like ACI, a PUT on a group that exists deploys it again: its containers
 * start over from Waiting with empty logs (`deployments` counts them). Like
 * ARM, secure environment values and registry passwords are never returned.
 *
 * The test drives containers (`setContainer`, `failProvisioning`,
 * `appendLog`); nothing moves on its own. Where the fake differs from Azure is
 * listed in the header of test/integration/aci-launcher.test.ts.
 */

export interface RecordedArmRequest {
  readonly method: string;
  /** Decoded path, e.g. `/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerInstance/containerGroups/x`. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The request body as sent (empty for none). */
  readonly body: string;
}

export type FakeContainerState =
  | { readonly state: 'Waiting'; readonly detailStatus?: string }
  | { readonly state: 'Running'; readonly detailStatus?: string }
  | { readonly state: 'Terminated'; readonly exitCode?: number; readonly detailStatus?: string };

/** An answer to force on the next matching request(s), before the fake's own routing. */
export interface InjectedFailure {
  readonly method?: string;
  /** Matched against the decoded path. */
  readonly path?: RegExp;
  readonly status: number;
  readonly code?: string;
  readonly message?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** How many requests it answers; default 1. */
  readonly times?: number;
}

/** What a test may inspect of a stored group: the definition as PUT (secrets included) and its state. */
export interface FakeGroupView {
  /** The last PUT body as JSON, exactly as received. */
  readonly definition: ArmContainerGroupBody;
  readonly provisioningState: string;
  readonly state: string;
  /** How many times a PUT deployed it (2 or more means it was restarted by a re-PUT). */
  readonly deployments: number;
}

interface ArmEnvironmentVariable {
  readonly name: string;
  readonly value?: string;
  readonly secureValue?: string;
}

interface ArmContainer {
  readonly name: string;
  readonly properties: {
    readonly image: string;
    readonly environmentVariables?: readonly ArmEnvironmentVariable[];
    readonly resources: { readonly requests: { readonly cpu: number; readonly memoryInGB: number } };
    readonly [key: string]: unknown;
  };
}

export interface ArmContainerGroupBody {
  readonly location: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly properties: {
    readonly containers: readonly ArmContainer[];
    readonly osType: string;
    readonly restartPolicy?: string;
    readonly imageRegistryCredentials?: readonly {
      readonly server: string;
      readonly username?: string;
      readonly password?: string;
    }[];
    readonly subnetIds?: readonly { readonly id: string }[];
    readonly [key: string]: unknown;
  };
}

interface LogEntry {
  readonly at: Date;
  text: string;
}

interface ContainerRecord {
  current: FakeContainerState;
  startTime?: Date;
  finishTime?: Date;
  events: { type: string; name: string; message: string; at: Date }[];
  log: LogEntry[];
  /** True when the last entry has not been ended by a newline yet. */
  open: boolean;
}

interface GroupRecord {
  definition: ArmContainerGroupBody;
  provisioningState: string;
  containers: Map<string, ContainerRecord>;
  deployments: number;
  stopped: boolean;
}

export interface FakeArmAciOptions {
  /**
   * Lines ACI keeps once a container has terminated (it keeps "about 16 KB or
   * 1,000 lines"); older lines are dropped at termination. Default 1000.
   */
  readonly retainLinesAfterExit?: number;
}

export interface FakeArmAci {
  /** `https://127.0.0.1:<port>`: give it to the client as `endpoint`. */
  readonly endpoint: string;
  /** PEM of the CA that signed the server certificate: the client's `tlsOptions.ca`. */
  readonly ca: string;
  readonly subscriptionId: string;
  /** The bearer token the fake accepts (give it to the test's TokenCredential). */
  readonly token: string;
  readonly requests: RecordedArmRequest[];
  createResourceGroup(name: string): void;
  /** Names of the groups that exist in a resource group, sorted. */
  groups(resourceGroup: string): string[];
  group(resourceGroup: string, name: string): FakeGroupView | undefined;
  /** Move a container to a state, as ACI would as it pulls, runs and ends it. */
  setContainer(resourceGroup: string, name: string, state: FakeContainerState, container?: string): void;
  /** The deployment failed before the container ran (an image that cannot be pulled). */
  failProvisioning(resourceGroup: string, name: string, message: string): void;
  /** Append raw output (lines end with `\n`; an unterminated tail stays open for the next append). */
  appendLog(resourceGroup: string, name: string, text: string, container?: string): void;
  failNext(failure: InjectedFailure): void;
  close(): Promise<void>;
}

const SUBSCRIPTION = '00000000-0000-4000-8000-000000000001';
const PROVIDER = 'Microsoft.ContainerInstance';
const ROUTE =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.ContainerInstance\/containerGroups\/([^/]+)(\/stop|\/containers\/([^/]+)\/logs)?$/i;

/** RFC 3339 with nanoseconds, as container runtimes print timestamps. */
const nanoTimestamp = (at: Date): string => at.toISOString().replace(/\.(\d{3})Z$/, '.$1000000Z');

export async function startFakeArmAci(options: FakeArmAciOptions = {}): Promise<FakeArmAci> {
  const retain = options.retainLinesAfterExit ?? 1000;
  const tls = testTls();
  const token = `fake-arm-token-${randomUUID()}`;
  const resourceGroups = new Map<string, Map<string, GroupRecord>>();
  const requests: RecordedArmRequest[] = [];
  const failures: { failure: InjectedFailure; left: number }[] = [];

  /** ARM matches resource group and resource names case-insensitively. */
  const rgOf = (name: string) => resourceGroups.get(name.toLowerCase());
  const groupOf = (rg: string, name: string): GroupRecord | undefined => rgOf(rg)?.get(name.toLowerCase());
  const mustGroup = (rg: string, name: string): GroupRecord => {
    const group = groupOf(rg, name);
    if (group === undefined) throw new Error(`fake ACI: no container group ${rg}/${name}`);
    return group;
  };
  const mustContainer = (group: GroupRecord, container: string): ContainerRecord => {
    const record = group.containers.get(container);
    if (record === undefined) throw new Error(`fake ACI: no container ${container}`);
    return record;
  };

  // Answering functions are typed `undefined`, not `void`, so `return send(…)` can end a branch.
  function send(
    res: ServerResponse,
    status: number,
    body?: unknown,
    headers: Record<string, string> = {},
  ): undefined {
    res.statusCode = status;
    res.setHeader('x-ms-request-id', randomUUID());
    res.setHeader('x-ms-correlation-request-id', randomUUID());
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
    if (body === undefined) {
      res.setHeader('Content-Length', 0);
      res.end();
      return;
    }
    const text = JSON.stringify(body);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.end(text);
  }

  const armError = (
    res: ServerResponse,
    status: number,
    code: string,
    message: string,
    headers?: Record<string, string>,
  ): undefined => send(res, status, { error: { code, message } }, headers);

  const notFound = (res: ServerResponse, rg: string, name: string): undefined =>
    armError(
      res,
      404,
      'ResourceNotFound',
      `The Resource '${PROVIDER}/containerGroups/${name}' under resource group '${rg}' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix`,
    );

  function groupState(group: GroupRecord): string {
    if (group.stopped) return 'Stopped';
    if (group.provisioningState === 'Failed') return 'Failed';
    const states = [...group.containers.values()].map((c) => c.current);
    if (states.some((s) => s.state === 'Running')) return 'Running';
    if (states.length > 0 && states.every((s) => s.state === 'Terminated')) {
      return states.every((s) => s.state === 'Terminated' && s.exitCode === 0) ? 'Succeeded' : 'Failed';
    }
    return 'Pending';
  }

  /** The GET shape: what was PUT, minus secure values and passwords, plus server-side state. */
  function view(sub: string, rg: string, name: string, group: GroupRecord): unknown {
    const d = group.definition;
    return {
      id: `/subscriptions/${sub}/resourceGroups/${rg}/providers/${PROVIDER}/containerGroups/${name}`,
      name,
      type: `${PROVIDER}/containerGroups`,
      location: d.location,
      ...(d.tags === undefined ? {} : { tags: d.tags }),
      properties: {
        ...d.properties,
        sku: 'Standard',
        provisioningState: group.provisioningState,
        containers: d.properties.containers.map((c) => {
          const record = group.containers.get(c.name);
          return {
            name: c.name,
            properties: {
              ...c.properties,
              // ARM never returns a secure value: only the variable's name.
              environmentVariables: (c.properties.environmentVariables ?? []).map((v) =>
                v.secureValue !== undefined ? { name: v.name } : { name: v.name, value: v.value },
              ),
              ...(record === undefined ? {} : { instanceView: containerView(record) }),
            },
          };
        }),
        ...(d.properties.imageRegistryCredentials === undefined
          ? {}
          : {
              imageRegistryCredentials: d.properties.imageRegistryCredentials.map((c) => ({
                server: c.server,
                ...(c.username === undefined ? {} : { username: c.username }),
              })),
            }),
        instanceView: { events: [], state: groupState(group) },
      },
    };
  }

  function containerView(record: ContainerRecord): unknown {
    const s = record.current;
    return {
      restartCount: 0,
      currentState: {
        state: s.state,
        ...(s.state !== 'Waiting' && record.startTime !== undefined
          ? { startTime: record.startTime.toISOString() }
          : {}),
        ...(s.state === 'Terminated' && s.exitCode !== undefined ? { exitCode: s.exitCode } : {}),
        ...(s.state === 'Terminated' && record.finishTime !== undefined
          ? { finishTime: record.finishTime.toISOString() }
          : {}),
        detailStatus: s.detailStatus ?? '',
      },
      events: record.events.map((e) => ({
        count: 1,
        firstTimestamp: e.at.toISOString(),
        lastTimestamp: e.at.toISOString(),
        name: e.name,
        message: e.message,
        type: e.type,
      })),
    };
  }

  function deploy(group: GroupRecord): void {
    group.deployments += 1;
    group.provisioningState = 'Creating';
    group.stopped = false;
    group.containers = new Map(
      group.definition.properties.containers.map((c) => [
        c.name,
        { current: { state: 'Waiting', detailStatus: '' }, events: [], log: [], open: false },
      ]),
    );
  }

  function handle(req: IncomingMessage, res: ServerResponse, body: string): undefined {
    const url = new URL(req.url ?? '/', 'https://fake');
    const path = decodeURIComponent(url.pathname);
    const query = Object.fromEntries(url.searchParams);
    const method = req.method ?? '';
    requests.push({ method, path, query, headers: { ...req.headers }, body });

    if (req.headers.authorization !== `Bearer ${token}`) {
      return armError(res, 401, 'AuthenticationFailed', 'Authentication failed.');
    }
    const injected = failures.find(
      (f) =>
        f.left > 0 &&
        (f.failure.method === undefined || f.failure.method === method) &&
        (f.failure.path === undefined || f.failure.path.test(path)),
    );
    if (injected !== undefined) {
      injected.left -= 1;
      const f = injected.failure;
      return armError(
        res,
        f.status,
        f.code ?? `Injected${f.status}`,
        f.message ?? `injected failure ${f.status}`,
        f.headers === undefined ? {} : { ...f.headers },
      );
    }
    if (query['api-version'] === undefined) {
      return armError(
        res,
        400,
        'MissingApiVersionParameter',
        'The api-version query parameter (?api-version=) is required for all requests.',
      );
    }

    const match = ROUTE.exec(path);
    if (match === null) return armError(res, 400, 'UnsupportedByFake', `${method} ${path}`);
    const [, sub = '', rg = '', name = '', suffix, container] = match;
    if (sub !== SUBSCRIPTION) {
      return armError(res, 404, 'SubscriptionNotFound', `The subscription '${sub}' could not be found.`);
    }
    const groups = rgOf(rg);
    if (groups === undefined) {
      return armError(res, 404, 'ResourceGroupNotFound', `Resource group '${rg}' could not be found.`);
    }
    const group = groups.get(name.toLowerCase());

    if (suffix === undefined && method === 'GET') {
      return group === undefined ? notFound(res, rg, name) : send(res, 200, view(sub, rg, name, group));
    }
    if (suffix === undefined && method === 'PUT') {
      let definition: ArmContainerGroupBody;
      try {
        definition = JSON.parse(body) as ArmContainerGroupBody;
      } catch {
        return armError(
          res,
          400,
          'InvalidRequestContent',
          'The request content was invalid and could not be deserialized.',
        );
      }
      const problem = invalid(name, definition);
      if (problem !== undefined) return armError(res, 400, problem.code, problem.message);
      const existing = group;
      const record: GroupRecord = existing ?? {
        definition,
        provisioningState: 'Creating',
        containers: new Map(),
        deployments: 0,
        stopped: false,
      };
      record.definition = definition;
      // ACI: a create request on an existing group deploys it again, from the start.
      deploy(record);
      groups.set(name.toLowerCase(), record);
      return send(res, existing === undefined ? 201 : 200, view(sub, rg, name, record));
    }
    if (suffix === undefined && method === 'DELETE') {
      if (group === undefined) return send(res, 204);
      groups.delete(name.toLowerCase());
      return send(res, 200, view(sub, rg, name, group));
    }
    if (suffix?.toLowerCase() === '/stop' && method === 'POST') {
      if (group === undefined) return notFound(res, rg, name);
      group.stopped = true;
      for (const record of group.containers.values()) {
        if (record.current.state !== 'Terminated') {
          record.current = { state: 'Terminated', exitCode: 137, detailStatus: 'Killed' };
          record.finishTime = new Date();
        }
      }
      return send(res, 204);
    }
    if (container !== undefined && method === 'GET') {
      if (group === undefined) return notFound(res, rg, name);
      const record = group.containers.get(container);
      if (record === undefined) {
        return armError(
          res,
          404,
          'ContainerNotFound',
          `The container '${container}' is not found in container group '${name}'.`,
        );
      }
      let entries = record.log;
      const tail = query.tail === undefined ? undefined : Number(query.tail);
      if (tail !== undefined && Number.isInteger(tail) && tail >= 0)
        entries = entries.slice(-tail || entries.length);
      const stamp = query.timestamps === 'true';
      const lines = entries.map((e) => (stamp ? `${nanoTimestamp(e.at)} ${e.text}` : e.text));
      const content = lines.length === 0 ? '' : `${lines.join('\n')}${record.open ? '' : '\n'}`;
      return send(res, 200, { content });
    }
    return armError(res, 400, 'UnsupportedByFake', `${method} ${path}`);
  }

  /** The few checks ARM makes synchronously on a PUT. */
  function invalid(name: string, d: ArmContainerGroupBody): { code: string; message: string } | undefined {
    if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(name) || name.includes('--')) {
      return {
        code: 'ContainerGroupNameInvalid',
        message: `The container group name '${name}' is invalid. The container group name must contain no more than 63 characters and must match the regex '[a-z0-9]([-a-z0-9]*[a-z0-9])?' (e.g. 'my-name').`,
      };
    }
    if (typeof d?.location !== 'string' || d.location === '') {
      return { code: 'LocationRequired', message: 'The location property is required for this definition.' };
    }
    const p = d.properties;
    if (p === undefined || !Array.isArray(p.containers) || p.containers.length === 0) {
      return { code: 'MissingContainers', message: 'The container group must have at least one container.' };
    }
    if (p.osType !== 'Linux' && p.osType !== 'Windows') {
      return { code: 'InvalidOsType', message: `The osType '${String(p.osType)}' is not valid.` };
    }
    for (const c of p.containers) {
      const requests = c.properties?.resources?.requests;
      if (typeof c.properties?.image !== 'string' || requests === undefined) {
        return {
          code: 'InvalidContainer',
          message: `The container '${c.name}' needs an image and resource requests.`,
        };
      }
      for (const v of c.properties.environmentVariables ?? []) {
        if ((v.value === undefined) === (v.secureValue === undefined)) {
          return {
            code: 'InvalidEnvironmentVariable',
            message: `The environment variable '${v.name}' must have exactly one of 'value' and 'secureValue'.`,
          };
        }
      }
    }
    return undefined;
  }

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (error) {
        armError(res, 500, 'InternalServerError', String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `https://127.0.0.1:${port}`,
    ca: tls.ca,
    subscriptionId: SUBSCRIPTION,
    token,
    requests,
    createResourceGroup(name) {
      if (!resourceGroups.has(name.toLowerCase())) resourceGroups.set(name.toLowerCase(), new Map());
    },
    groups(rg) {
      return [...(rgOf(rg)?.keys() ?? [])].sort();
    },
    group(rg, name) {
      const group = groupOf(rg, name);
      return group === undefined
        ? undefined
        : {
            definition: group.definition,
            provisioningState: group.provisioningState,
            state: groupState(group),
            deployments: group.deployments,
          };
    },
    setContainer(rg, name, state, container = 'runner') {
      const group = mustGroup(rg, name);
      const record = mustContainer(group, container);
      const now = new Date();
      if (state.state !== 'Waiting' && record.startTime === undefined) record.startTime = now;
      if (state.state === 'Running')
        record.events.push({ type: 'Normal', name: 'Started', message: 'Started container', at: now });
      if (state.state === 'Terminated') {
        record.finishTime = now;
        // ACI keeps only the tail of a finished container's output.
        if (record.log.length > retain) record.log = record.log.slice(-retain);
      }
      record.current = state;
      group.provisioningState = 'Succeeded';
    },
    failProvisioning(rg, name, message) {
      const group = mustGroup(rg, name);
      group.provisioningState = 'Failed';
      for (const record of group.containers.values()) {
        record.current = { state: 'Waiting', detailStatus: 'ErrImagePull' };
        record.events.push({ type: 'Warning', name: 'Failed', message, at: new Date() });
      }
    },
    appendLog(rg, name, text, container = 'runner') {
      const record = mustContainer(mustGroup(rg, name), container);
      if (text === '') return;
      const pieces = text.split('\n');
      const ended = text.endsWith('\n');
      if (ended) pieces.pop();
      pieces.forEach((piece, i) => {
        const last = record.log.at(-1);
        if (i === 0 && record.open && last !== undefined) last.text += piece;
        else record.log.push({ at: new Date(), text: piece });
      });
      record.open = pieces.length > 0 ? !ended : record.open && !ended;
    },
    failNext(failure) {
      failures.push({ failure, left: failure.times ?? 1 });
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
