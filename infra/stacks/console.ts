import { join } from 'node:path';
import type { RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import { consoleScopes, type EnvironmentConfig } from '../config.ts';
import { ConsoleSite, regionalApiPattern } from '../constructs/console-site.ts';
import type { ControlPlaneApi } from '../constructs/control-plane-api.ts';

/** What the console's site takes from the rest of the stack. */
export interface ConsoleSiteInputs {
  readonly projectRoot: string;
  readonly api: ControlPlaneApi;
  /** The bucket server access logs go to. */
  readonly accessLogs: IBucket;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The console's site, and the API's CORS for its origin. With a custom
 * domain, the CSP names the API's exact origin. On the distribution's own
 * domain it cannot: the API's CORS names the distribution, whose headers
 * policy would name the API, a cycle CloudFormation refuses; so connect-src
 * allows this region's execute-api hosts (CORS, which is exact, is what
 * keeps other origins from reading the API).
 */
export function consoleSiteFor(
  stack: Stack,
  config: EnvironmentConfig,
  { projectRoot, api, accessLogs, logRetention, removalPolicy }: ConsoleSiteInputs,
): ConsoleSite | undefined {
  const site = config.console;
  const jwt = config.jwt;
  if (site === undefined || jwt === undefined) return undefined;
  const domain =
    site.domainName === undefined || site.certificateArn === undefined
      ? undefined
      : { name: site.domainName, certificateArn: site.certificateArn };
  const consoleSite = new ConsoleSite(stack, 'Console', {
    consoleDir: join(projectRoot, 'console'),
    apiConnectSource: domain === undefined ? regionalApiPattern(stack) : api.api.apiEndpoint,
    issuer: jwt.issuer,
    connectOrigins: site.connectOrigins,
    ...(domain === undefined ? {} : { domain }),
    serverAccessLogs: accessLogs,
    logRetention,
    removalPolicy,
  });
  api.allowBrowserOrigin(consoleSite.origin);
  consoleSite.deploy({
    apiUrl: api.stage.url,
    oidc: {
      issuer: jwt.issuer,
      clientId: site.oidc.clientId,
      scopes: consoleScopes(config),
      bearer: site.oidc.bearer,
    },
  });
  return consoleSite;
}
