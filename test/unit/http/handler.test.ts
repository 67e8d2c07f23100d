import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { apiGatewayAuthenticator } from '../../../shared/http/api-gateway-auth.ts';
import { type HttpEvent, httpHandler, json } from '../../../shared/http/handler.ts';

/** The Lambda path: API Gateway's authorizer identity in the request context, the whole body in the event. */
const handler = httpHandler(
  { authenticate: apiGatewayAuthenticator(), logger: new Logger({ logLevel: 'SILENT' }) },
  { body: z.unknown(), handle: async ({ body }) => json(200, { got: body }) },
);

const event = (body: string, signedBy?: string): HttpEvent =>
  ({
    version: '2.0',
    routeKey: 'POST /things',
    rawPath: '/things',
    rawQueryString: '',
    headers: { 'content-type': 'application/json' },
    requestContext: {
      http: { method: 'POST', path: '/things' },
      ...(signedBy === undefined ? {} : { authorizer: { iam: { userArn: signedBy } } }),
    },
    body,
    isBase64Encoded: false,
  }) as unknown as HttpEvent;

const call = async (e: HttpEvent) => {
  const result = await handler(e, {} as Context);
  return { status: result.statusCode, problem: JSON.parse(result.body ?? '{}') };
};

const deep = `${'['.repeat(1_000)}${']'.repeat(1_000)}`;
const huge = JSON.stringify({ blob: 'x'.repeat(300 * 1024) });
const ci = 'arn:aws:iam::123456789012:role/ci';

describe('httpHandler on the Lambda path', () => {
  it.each([
    ['a body above the limit', huge],
    ['a body nested too deep', deep],
    ['a body that is not JSON', '{'],
  ])('answers 401 to an unidentified caller with %s, before looking at the body', async (_what, body) => {
    expect((await call(event(body))).status).toBe(401);
  });

  it('answers an identified caller 413 for a body above the limit and 400 for one nested too deep', async () => {
    expect((await call(event(huge, ci))).status).toBe(413);
    const nested = await call(event(deep, ci));
    expect(nested.status).toBe(400);
    expect(nested.problem.type).toBe('https://remote-worker.dev/problems/validation-failed');
  });

  it('serves an identified caller', async () => {
    expect(await call(event('{"a":[1]}', ci))).toEqual({ status: 200, problem: { got: { a: [1] } } });
  });
});
