import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import {
  ECS_TASK_STATE_CHANGE,
  type EcsTaskStateChangeEvent,
} from '../../functions/status-sync/ecs-task-state-change.ts';
import type { HttpEvent } from '../../shared/http/handler.ts';

/*
 * The events AWS would hand the handlers, built in their services' shapes:
 * API Gateway HTTP API (payload 2.0, IAM caller), Lambda's SQS event source,
 * and EventBridge's ECS Task State Change (moto emits no ECS events).
 */

export const CALLER = 'arn:aws:iam::123456789012:role/bench';
export const context = {
  functionName: 'bench',
  awsRequestId: 'req',
  getRemainingTimeInMillis: () => 30_000,
} as Context;

/**
 * An API Gateway HTTP API event (payload 2.0). The caller is CALLER through
 * IAM unless `authorizer` is given: `{}` for an unauthenticated request, a
 * `{ jwt: … }` for a JWT authorizer's context.
 */
export function apiEvent(
  routeKey: string,
  path: string,
  extra: { id?: string; body?: unknown; authorizer?: unknown } = {},
): HttpEvent {
  const [method = 'GET'] = routeKey.split(' ');
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: extra.body === undefined ? {} : { 'content-type': 'application/json' },
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'bench' },
      requestId: randomUUID(),
      routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
      authorizer: 'authorizer' in extra ? extra.authorizer : { iam: { userArn: CALLER } },
    } as HttpEvent['requestContext'],
    isBase64Encoded: false,
    ...(extra.id === undefined ? {} : { pathParameters: { id: extra.id } }),
    ...(extra.body === undefined ? {} : { body: JSON.stringify(extra.body) }),
  };
}

export function ecsEvent(
  cluster: string,
  taskArn: string,
  runId: string,
  lastStatus: string,
  version: number,
): EcsTaskStateChangeEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': ECS_TASK_STATE_CHANGE,
    source: 'aws.ecs',
    account: '123456789012',
    time: new Date().toISOString(),
    region: 'us-east-1',
    resources: [taskArn],
    detail: {
      taskArn,
      clusterArn: `arn:aws:ecs:us-east-1:123456789012:cluster/${cluster}`,
      lastStatus,
      version,
      startedBy: `rw/${runId}/1`,
      group: `rw:${runId}:1`,
      ...(lastStatus === 'STOPPED'
        ? { stopCode: 'EssentialContainerExited', containers: [{ name: 'runner', exitCode: 0 }] }
        : { containers: [{ name: 'runner' }] }),
    },
  };
}
