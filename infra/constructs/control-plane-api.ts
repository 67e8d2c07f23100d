import type { RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  type CfnApi,
  HttpApi,
  HttpMethod,
  type HttpStage,
  type IHttpRouteAuthorizer,
  LogGroupLogDestination,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpIamAuthorizer, HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

export interface ApiRoute {
  /** `METHOD /path/{param}`, as in functions/api/routes.ts. */
  readonly routeKey: string;
  readonly handler: IFunction;
  /** Construct-id-safe name of the handler (one integration per handler). */
  readonly name: string;
}

export interface ControlPlaneApiProps {
  readonly routes: readonly ApiRoute[];
  /** With an issuer: JWT authorizer and these scopes on every route; without: IAM SigV4. */
  readonly jwt?: {
    readonly issuer: string;
    readonly audience: readonly string[];
    readonly scopes: readonly string[];
  };
  readonly rateLimit: number;
  readonly burstLimit: number;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

const METHODS: Readonly<Record<string, HttpMethod>> = {
  GET: HttpMethod.GET,
  PUT: HttpMethod.PUT,
  POST: HttpMethod.POST,
  DELETE: HttpMethod.DELETE,
  PATCH: HttpMethod.PATCH,
};

/** `GET /runs/{id}` → [GET, '/runs/{id}']; throws on anything else so a typo in the route table fails synth. */
export function parseRouteKey(routeKey: string): { method: HttpMethod; path: string } {
  const match = /^([A-Z]+) (\/[A-Za-z0-9/{}_.-]*)$/.exec(routeKey);
  const method = match?.[1] === undefined ? undefined : METHODS[match[1]];
  if (match?.[2] === undefined || method === undefined) throw new Error(`Not a route key: ${routeKey}`);
  return { method, path: match[2] };
}

/** What the web console sends: the methods of its routes and the headers it sets (functions/api/routes.ts). */
export const BROWSER_METHODS = ['GET', 'POST', 'PUT', 'DELETE'] as const;
export const BROWSER_HEADERS = ['authorization', 'content-type', 'idempotency-key'] as const;

/**
 * The public REST API (v1) as an HTTP API: one Lambda integration per route,
 * an authorizer on every route (there is no unauthenticated route, `/healthz`
 * included), JSON access logs and stage throttling.
 */
export class ControlPlaneApi extends Construct {
  readonly api: HttpApi;
  readonly stage: HttpStage;
  readonly accessLogs: LogGroup;

  constructor(scope: Construct, id: string, props: ControlPlaneApiProps) {
    super(scope, id);
    const authorizer: IHttpRouteAuthorizer =
      props.jwt === undefined
        ? new HttpIamAuthorizer()
        : new HttpJwtAuthorizer('Jwt', props.jwt.issuer, { jwtAudience: [...props.jwt.audience] });
    const authorizationScopes = props.jwt?.scopes.length ? [...props.jwt.scopes] : undefined;

    this.api = new HttpApi(this, 'HttpApi', {
      description: 'Remote Worker REST API (v1)',
      createDefaultStage: false,
      defaultAuthorizer: authorizer,
      ...(authorizationScopes === undefined ? {} : { defaultAuthorizationScopes: authorizationScopes }),
    });
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.stage = this.api.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.rateLimit, burstLimit: props.burstLimit },
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            caller: props.jwt === undefined ? '$context.identity.userArn' : '$context.authorizer.claims.sub',
            authorizerError: '$context.authorizer.error',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    const integrations = new Map<IFunction, HttpLambdaIntegration>();
    for (const route of props.routes) {
      const { method, path } = parseRouteKey(route.routeKey);
      let integration = integrations.get(route.handler);
      if (integration === undefined) {
        integration = new HttpLambdaIntegration(`${route.name}Integration`, route.handler);
        integrations.set(route.handler, integration);
      }
      this.api.addRoutes({ path, methods: [method], integration });
    }
  }

  /**
   * Lets one browser origin (the console's) call the API: API Gateway
   * answers the preflight itself (no OPTIONS route exists, so the authorizer
   * never sees it) and adds the CORS headers to every answer of that origin.
   * No credentials mode: the console sends a bearer token, not cookies. Set on
   * the L1 resource so the origin can be a token of a distribution made after
   * the API (the console's CSP names the API, its CloudFront domain names the console).
   */
  allowBrowserOrigin(origin: string): void {
    (this.api.node.defaultChild as CfnApi).corsConfiguration = {
      allowOrigins: [origin],
      allowMethods: [...BROWSER_METHODS],
      allowHeaders: [...BROWSER_HEADERS],
      allowCredentials: false,
      maxAge: 3600,
    };
  }
}
