/*
 * The events each Lambda bundle's first call gets in bench/lambda-bundles.ts:
 * what a real request or delivery brings, so the handler authenticates,
 * validates and reaches its first SDK call.
 */

/** The caller as API Gateway's JWT authorizer hands it to the function (shared/http/api-gateway-auth.ts). */
const AUTHORIZER = { jwt: { claims: { sub: 'bench' }, scopes: [] } };

/** A valid body for each route that takes one, so the request gets past validation to the route's work. */
const BODIES: Readonly<Record<string, unknown>> = {
  'PUT /targets/{id}': { kind: 'vm', cloud: 'aws', name: 'bench', address: '10.0.0.1', connection: 'ssh' },
  'POST /runs': { kind: 'vm', targetId: 'bench', asset: 'hello/site.yml' },
  'POST /batches': { kind: 'vm', targetIds: ['bench'], asset: 'hello/site.yml' },
  'POST /assets': { path: 'bench/site.yml', contentBase64: Buffer.from('- hosts: all\n').toString('base64') },
};

/** An authenticated API Gateway (HTTP API, payload 2.0) request for `route` ('GET /runs/{id}'). */
export function apiEvent(route: string): Record<string, unknown> {
  const [method = 'GET', template = '/'] = route.split(' ');
  const path = template.replaceAll(/\{[^}]+\}/g, 'bench');
  const body = BODIES[route];
  return {
    version: '2.0',
    routeKey: route,
    rawPath: path,
    rawQueryString: '',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(template.includes('{id}') ? { pathParameters: { id: 'bench' } } : {}),
    requestContext: {
      http: { method, path, sourceIp: '127.0.0.1' },
      requestId: 'bench',
      authorizer: AUTHORIZER,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    isBase64Encoded: false,
  };
}

/**
 * EcsTaskStateChange: the event its EventBridge rule passes (a task of ours, by
 * its group `rw:<runId>:<attempt>`), so it reads the run as a real one does.
 */
export const ECS_TASK_EVENT = {
  version: '0',
  id: 'bench',
  'detail-type': 'ECS Task State Change',
  source: 'aws.ecs',
  account: '111111111111',
  time: '2026-01-01T00:00:00Z',
  region: 'eu-west-1',
  resources: [],
  detail: {
    taskArn: 'arn:aws:ecs:eu-west-1:111111111111:task/bench/0123456789abcdef0123456789abcdef',
    clusterArn: 'arn:aws:ecs:eu-west-1:111111111111:cluster/bench',
    lastStatus: 'RUNNING',
    version: 2,
    group: 'rw:01JBENCH0000000000000000RN:1',
  },
};

/** One run message, as the dispatch queue (and its dead-letter queue) delivers it. */
export const SQS_EVENT = {
  Records: [
    {
      messageId: 'bench',
      receiptHandle: 'bench',
      body: JSON.stringify({ runId: '01JBENCH0000000000000000RN' }),
      attributes: { ApproximateReceiveCount: '1' },
      messageAttributes: {},
      md5OfBody: '',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:eu-west-1:111111111111:dispatch',
      awsRegion: 'eu-west-1',
    },
  ],
};
/**
 * EventBridge functions (status sync, reconciler, poller, scheduled refresh):
 * a scheduled event. With nothing configured each returns or fails fast (the
 * endpoint refuses), after building its composition: with code splitting, a
 * function that is only imported would load none of it and look cheaper than
 * it is.
 */
export const SCHEDULED_EVENT = {
  version: '0',
  id: 'bench',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '111111111111',
  time: '2026-01-01T00:00:00Z',
  region: 'eu-west-1',
  resources: [],
  detail: {},
};
