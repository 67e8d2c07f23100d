import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { DomainError, type FieldError, ValidationError } from '../domain/errors.ts';
import type * as z from '../lib/zod.ts';
import type { Logger } from '../ports/logger.ts';
import { MAX_BODY_BYTES, readJsonBody } from './json-body.ts';
import { problemResponse } from './problem.ts';

export type HttpEvent = APIGatewayProxyEventV2;
export type HttpResult = APIGatewayProxyStructuredResultV2;
export type HttpHandler = ((event: HttpEvent, context: Context) => Promise<HttpResult>) & {
  /** Set when the route takes bodies above MAX_BODY_BYTES (asset upload); servers size their read by it. */
  readonly maxBodyBytes?: number;
  /**
   * True for the routes anyone may call (/healthz, /openapi.json). A server
   * in front of the handlers (local mode) authenticates every other request
   * from its headers before it reads the body; the handler checks again.
   */
  readonly public?: boolean;
};

/** Who is calling: resolves to a principal name or throws UnauthorizedError. */
export type Authenticator = (event: HttpEvent) => Promise<string>;

export interface HttpDeps {
  readonly authenticate: Authenticator;
  readonly logger: Logger;
}

interface Request<B, Q, P> {
  readonly body: B;
  readonly query: Q;
  readonly params: P;
  readonly principal: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
}

export interface Route<B, Q, P> {
  readonly body?: z.ZodMiniType<B>;
  readonly query?: z.ZodMiniType<Q>;
  readonly params?: z.ZodMiniType<P>;
  /** Skip authentication (liveness and the OpenAPI contract only). */
  readonly public?: boolean;
  /** Body size limit for this route; MAX_BODY_BYTES when absent. */
  readonly maxBodyBytes?: number;
  handle(request: Request<B, Q, P>): Promise<HttpResult>;
}

export const json = (
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): HttpResult => ({
  statusCode,
  headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
  body: JSON.stringify(body),
});

function fieldErrors(error: z.core.$ZodError, prefix: string): FieldError[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter((p) => p !== '').join('.'),
    message: issue.message,
  }));
}

function validate<T>(schema: z.ZodMiniType<T> | undefined, value: unknown, where: string): T {
  if (schema === undefined) return undefined as T;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new ValidationError(`The ${where} is not valid`, fieldErrors(parsed.error, where));
  }
  return parsed.data;
}

/** Errors become problem+json; the log gets details the client must not see. */
const problemJson = (logger: Logger): MiddlewareObj<HttpEvent, HttpResult> => ({
  onError: async (request) => {
    const error = request.error;
    if (error instanceof DomainError) {
      logger.info('request refused', { code: error.code, path: request.event.rawPath });
    } else {
      logger.error('request failed', { path: request.event.rawPath, error: error as Error });
    }
    request.response = problemResponse(error, request.event.rawPath);
  },
});

/**
 * Build a Lambda handler (API Gateway HTTP API, payload v2) for one route:
 * authenticate → parse and validate body, query and path → domain call →
 * JSON answer. The same handler object serves local mode over HTTP.
 *
 * @example
 * export const getRun = (deps) => httpHandler(deps, { params: z.object({ id }), handle: async ({ params }) => json(200, …) });
 */
export function httpHandler<B = undefined, Q = undefined, P = undefined>(
  deps: HttpDeps,
  route: Route<B, Q, P>,
): HttpHandler {
  const handler = middy<HttpEvent, HttpResult>()
    .use(problemJson(deps.logger))
    .handler(async (event) => {
      const principal = route.public ? 'anonymous' : await deps.authenticate(event);
      const bodyValue = readJsonBody(event, route.maxBodyBytes ?? MAX_BODY_BYTES);
      if (route.body === undefined && bodyValue !== undefined) {
        throw new ValidationError('This route takes no request body');
      }
      const body = validate(route.body, bodyValue, 'body');
      const query = validate(route.query, event.queryStringParameters ?? {}, 'query');
      const params = validate(route.params, event.pathParameters ?? {}, 'path');
      return route.handle({ body, query, params, principal, headers: event.headers });
    }) as unknown as HttpHandler;
  return Object.assign(handler, {
    ...(route.maxBodyBytes === undefined ? {} : { maxBodyBytes: route.maxBodyBytes }),
    ...(route.public === true ? { public: true } : {}),
  });
}
