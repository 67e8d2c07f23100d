import { apiGatewayAuthenticator } from '../../http/api-gateway-auth.ts';
import type { BareApiDeps } from './kinds.ts';
import { lambdaLogger } from './logger.ts';

/** The deps of a bare route: the logger and API Gateway's caller identity. */
export const bareApiDeps = (env: Readonly<Record<string, string | undefined>>): BareApiDeps => ({
  logger: lambdaLogger(env.LOG_LEVEL),
  authenticate: apiGatewayAuthenticator(),
});
