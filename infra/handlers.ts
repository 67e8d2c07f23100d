import type { RouteKey } from '../functions/api/routes.ts';

/**
 * Every Lambda handler the stack deploys and what each may touch. A route
 * added to API_ROUTES does not compile here until it is given a handler and
 * its access, so no route ships with a guessed policy.
 */
export type Access =
  | 'table:read'
  | 'table:write'
  | 'dispatch:send'
  | 'relay:send'
  | 'assets:read'
  | 'assets:write'
  | 'run-logs:read'
  | 'ecs:launch'
  | 'ecs:observe'
  | 'ecs:cleanup'
  /** StopTask on this cluster's tasks: a cancel stops a running task at once, not at the reconciler's next sweep. */
  | 'ecs:stop'
  | 'secrets:describe'
  /** GetSecretValue under the secrets prefix: values for ACI/Kubernetes tasks, SSH keys, kubeconfigs, the Password Safe key. */
  | 'secrets:read'
  /** Create, update and delete the per-run secrets under `<secretsPrefix>runs/` (values minted at launch). */
  | 'secrets:run-values'
  /** ec2:DescribeInstances in the discovery regions, when discovery_clouds lists aws (Azure and GCP use their own credentials). */
  | 'discovery:list';

export interface HandlerSpec {
  /** Project-relative module whose `handler` export is the Lambda handler. */
  readonly entry: string;
  readonly description: string;
  readonly access: readonly Access[];
  readonly timeoutSeconds?: number;
  readonly memoryMiB?: number;
  /**
   * Starts, stops, polls or reads the output of runner tasks on any backend:
   * bundled with the ACI, Cloud Run and Kubernetes SDKs, each in chunks that
   * load only when a run on that backend is acted on (infra/bundling.ts
   * splits). Every other function is built without them.
   */
  readonly controlsTasks?: boolean;
  /**
   * Lists the clouds' VMs (POST /discovery/refresh, the scheduled refresh):
   * bundled with the EC2, Azure Compute and GCE SDKs, which every other
   * function is built without (they only read the cached list).
   */
  readonly discoversVms?: boolean;
}

const api = (
  file: string,
  description: string,
  access: readonly Access[],
  options: Pick<HandlerSpec, 'controlsTasks' | 'discoversVms' | 'timeoutSeconds'> = {},
): HandlerSpec => ({
  entry: `functions/api/${file}.ts`,
  description,
  access,
  ...options,
});

const READ: readonly Access[] = ['table:read'];
const WRITE: readonly Access[] = ['table:read', 'table:write'];
/** Submits keep plaintext passwords as per-run secrets (and delete them when a retried submit made a copy). */
/** Listing the clouds and writing each one's list to the table. */
const DISCOVER: readonly Access[] = [...WRITE, 'discovery:list'];
/**
 * Seconds. HTTP API integrations answer within 30 s; each cloud's listing is
 * cut off after 20 (shared/app/discovery.ts CLOUD_LISTING_TIMEOUT_SECONDS),
 * leaving time for the table writes.
 */
const DISCOVERY_TIMEOUT_SECONDS = 30;

const SUBMIT: readonly Access[] = [...WRITE, 'dispatch:send', 'assets:read', 'secrets:run-values'];

export const API_HANDLERS = {
  'GET /healthz': api('healthz', 'Liveness', []),
  'PUT /targets/{id}': api('put-target', 'Create or replace a target', WRITE),
  'GET /targets': api('list-targets', 'List targets', READ),
  'GET /targets/{id}': api('get-target', 'Read a target', READ),
  'DELETE /targets/{id}': api('delete-target', 'Delete a target', WRITE),
  'GET /inventory': api('get-inventory', 'Ansible inventory from the registry', READ),
  // Discovery's cache is one item per cloud in the runs table; only the refreshing functions list clouds.
  'GET /discovery': api('get-discovery', 'Discovered cloud VMs', READ),
  'POST /discovery/refresh': api('refresh-discovery', 'Refresh discovered cloud VMs', DISCOVER, {
    discoversVms: true,
    timeoutSeconds: DISCOVERY_TIMEOUT_SECONDS,
  }),
  'POST /runs': api('submit-run', 'Submit a run', SUBMIT),
  'GET /runs': api('list-runs', 'List runs', READ),
  'GET /runs/{id}': api('get-run', 'Read a run', READ),
  'GET /runs/{id}/logs': api('get-run-logs', "Read a run's output", [...READ, 'run-logs:read'], {
    controlsTasks: true,
  }),
  'POST /runs/{id}/cancel': api(
    'cancel-run',
    'Request cancellation of a run',
    [...WRITE, 'ecs:stop', 'secrets:run-values'],
    { controlsTasks: true },
  ),
  'POST /batches': api('submit-batch', 'Submit a batch', SUBMIT),
  'GET /batches/{id}': api('get-batch', 'Roll up the states of a batch', READ),
  'POST /batches/{id}/retry': api('retry-batch', 'Retry the failed runs of a batch', SUBMIT),
  'POST /assets': api('upload-asset', 'Upload an asset', ['assets:read', 'assets:write']),
  'GET /assets': api('list-assets', 'List assets', ['assets:read']),
  'GET /openapi.json': api('get-openapi', 'The OpenAPI document', []),
} as const satisfies Record<RouteKey, HandlerSpec>;

/** Seconds; the dispatch queue's visibility timeout is six times this. */
export const DISPATCHER_TIMEOUT_SECONDS = 60;
/** Seconds; the dead-letter queues' visibility timeout is six times this. */
export const DEAD_LETTER_TIMEOUT_SECONDS = 30;

export const WORKER_HANDLERS = {
  DispatchRuns: {
    entry: 'functions/dispatcher/dispatch-runs.ts',
    description: 'Claims queued runs and launches them on their runner',
    access: [
      ...WRITE,
      'relay:send',
      'assets:read',
      'ecs:launch',
      'ecs:observe',
      'ecs:cleanup',
      'secrets:describe',
      'secrets:read',
      'secrets:run-values',
    ],
    timeoutSeconds: DISPATCHER_TIMEOUT_SECONDS,
    controlsTasks: true,
  },
  SettleDeadLetters: {
    entry: 'functions/dispatcher/settle-dead-letters.ts',
    description: 'Fails the runs whose messages reached a dead-letter queue',
    access: [...WRITE, 'secrets:run-values'],
    timeoutSeconds: DEAD_LETTER_TIMEOUT_SECONDS,
  },
  EcsTaskStateChange: {
    entry: 'functions/status-sync/ecs-task-state-change.ts',
    description: 'Applies ECS task state changes to runs',
    access: [...WRITE, 'ecs:cleanup', 'secrets:run-values'],
    timeoutSeconds: 30,
  },
  ReconcileRuns: {
    entry: 'functions/status-sync/reconcile-runs.ts',
    description: 'Settles runs whose events were missed and times out runs past their deadline',
    access: [...WRITE, 'dispatch:send', 'ecs:observe', 'ecs:cleanup', 'secrets:run-values'],
    timeoutSeconds: 300,
    controlsTasks: true,
  },
  PollBackends: {
    entry: 'functions/status-sync/poll-backends.ts',
    description: 'Polls ACI, Cloud Run and Kubernetes runs for their status every few seconds',
    access: [...WRITE, 'secrets:read', 'secrets:run-values'],
    // Started every minute; sweeps until 10 s before this timeout.
    timeoutSeconds: 60,
    controlsTasks: true,
  },
  /** Deployed only when discovery_clouds is set and discovery_refresh_seconds is not 0 (infra/constructs/discovery-schedule.ts). */
  RefreshDiscoverySchedule: {
    entry: 'functions/discovery/refresh-discovery-schedule.ts',
    description: 'Refreshes the discovered cloud VMs every discovery_refresh_seconds',
    access: DISCOVER,
    timeoutSeconds: DISCOVERY_TIMEOUT_SECONDS,
    discoversVms: true,
  },
} as const satisfies Record<string, HandlerSpec>;

/** `functions/api/submit-run.ts` → `SubmitRun`: the construct id of the handler's function. */
export const constructIdOf = (entry: string): string =>
  (entry.split('/').at(-1) ?? entry)
    .replace(/\.ts$/, '')
    .replace(/(^|-)([a-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase());
