import { UnauthorizedError } from '../domain/errors.ts';
import type { Authenticator, HttpEvent } from './handler.ts';

const field = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.trim() !== '';

/**
 * Who called, as API Gateway (HTTP API, payload 2.0) established it. API
 * Gateway has already verified the caller before the Lambda runs, so this
 * only reads the verified identity from the request context:
 *
 * - IAM (SigV4) authorization: `requestContext.authorizer.iam.userArn`.
 * - JWT authorizer: `requestContext.authorizer.jwt.claims.sub`.
 *
 * Anything else — no authorizer, a Lambda authorizer, an empty identity — is
 * refused with UnauthorizedError. That is also why every route except the
 * public ones must be deployed with one of those two authorizers: without it
 * there is no identity to read and every request is refused, never let through.
 *
 * @example
 * const deps: ApiDeps = { ...appDeps, authenticate: apiGatewayAuthenticator(), logger };
 * // event.requestContext.authorizer = { iam: { userArn: 'arn:aws:iam::123456789012:role/ci' , … } }
 * await deps.authenticate(event); // 'arn:aws:iam::123456789012:role/ci'
 */
export function apiGatewayAuthenticator(): Authenticator {
  return async (event: HttpEvent) => {
    const authorizer = field(event.requestContext, 'authorizer');
    const userArn = field(field(authorizer, 'iam'), 'userArn');
    if (nonEmpty(userArn)) return userArn;
    const subject = field(field(field(authorizer, 'jwt'), 'claims'), 'sub');
    if (nonEmpty(subject)) return subject;
    throw new UnauthorizedError(
      'This API accepts IAM (SigV4) signed requests or a JWT from the configured issuer; the request carried neither',
    );
  };
}
