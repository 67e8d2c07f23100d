import { execFileSync } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { DockerImage, Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Certificate } from 'aws-cdk-lib/aws-certificatemanager';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  Function as EdgeFunction,
  FunctionCode,
  FunctionEventType,
  FunctionRuntime,
  HeadersFrameOption,
  HeadersReferrerPolicy,
  HttpVersion,
  ResponseHeadersPolicy,
  SecurityPolicyProtocol,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Bucket, type IBucket, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Asset } from 'aws-cdk-lib/aws-s3-assets';
import { BucketDeployment, CacheControl, Source } from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';
import { privateBucketProps } from './private-bucket.ts';

/** What the console reads from `/config.json` at start (console/src/config.ts reads the same keys). */
export interface ConsoleRuntimeConfig {
  /** Base URL of the REST API (the HTTP API's `$default` stage). */
  readonly apiUrl: string;
  readonly oidc: {
    readonly issuer: string;
    readonly clientId: string;
    readonly scopes: readonly string[];
    readonly bearer: 'access_token' | 'id_token';
  };
}

export interface ConsoleSiteProps {
  /** The console's source folder (`console/`): `cdk synth` builds it (`npm run build --prefix console`). */
  readonly consoleDir: string;
  /** `connect-src` for the API: its exact origin, or the narrowest pattern that cannot refer to it (see the stack). */
  readonly apiConnectSource: string;
  /** The OIDC issuer; its origin is allowed in `connect-src` (discovery and the token endpoint). */
  readonly issuer: string;
  /** More `connect-src` origins (a token endpoint on another host than the issuer). */
  readonly connectOrigins: readonly string[];
  /** A custom domain and its us-east-1 certificate; without them the distribution's own domain. */
  readonly domain?: { readonly name: string; readonly certificateArn: string };
  /** Where the site's buckets write their S3 server access logs. */
  readonly serverAccessLogs: IBucket;
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The console's Content-Security-Policy on CloudFront: its own files only,
 * no inline script or style, no framing; it may call its own origin
 * (`config.json`), the API and the issuer.
 */
export function consoleCsp(connectSources: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${["'self'", ...connectSources].join(' ')}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Hash routes (`/#/runs/…`) never reach CloudFront, but a path such as
 * `/runs` typed or bookmarked does: every path without a file extension is
 * answered with `index.html`. Missing files (`/static/x.js`) stay errors, so a
 * stale chunk never arrives as HTML (what a 403/404 error page would do).
 */
const SPA_FALLBACK = `function handler(event) {
  var request = event.request;
  if (!/\\.[A-Za-z0-9]+$/.test(request.uri)) request.uri = '/index.html';
  return request;
}`;

/**
 * The web console as a static site: a private bucket read by CloudFront
 * through Origin Access Control, security headers on every answer, TLS 1.2+
 * on a custom domain, CloudFront access logs, and the built console plus a
 * `config.json` deployed with `aws-s3-deployment` (its handler is a prebuilt
 * Lambda asset, so synth needs no Docker).
 */
export class ConsoleSite extends Construct {
  readonly bucket: Bucket;
  readonly accessLogs: Bucket;
  readonly distribution: Distribution;
  readonly headers: ResponseHeadersPolicy;
  /** `https://<domain>`: the one browser origin the API allows. */
  readonly origin: string;
  /** The role of aws-s3-deployment's handler (made here, so it starts without a managed policy); set by deploy(). */
  deploymentRole: Role | undefined;
  private readonly props: ConsoleSiteProps;

  constructor(scope: Construct, id: string, props: ConsoleSiteProps) {
    super(scope, id);
    this.props = props;
    const common = {
      ...privateBucketProps(props.removalPolicy),
      serverAccessLogsBucket: props.serverAccessLogs,
    };
    this.bucket = new Bucket(this, 'Site', { ...common, serverAccessLogsPrefix: 'console-site/' });
    this.accessLogs = new Bucket(this, 'CdnLogs', {
      ...common,
      serverAccessLogsPrefix: 'console-cdn-logs/',
      // CloudFront standard logs are delivered with an ACL: the bucket must accept them.
      objectOwnership: ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
    });

    this.headers = new ResponseHeadersPolicy(this, 'Headers', {
      comment: 'Remote Worker console: security headers',
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: consoleCsp([
            props.apiConnectSource,
            new URL(props.issuer).origin,
            ...props.connectOrigins.map((o) => new URL(o).origin),
          ]),
          override: true,
        },
        strictTransportSecurity: {
          accessControlMaxAge: Duration.days(730),
          includeSubdomains: true,
          override: true,
        },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
      customHeadersBehavior: {
        customHeaders: [
          { header: 'Cross-Origin-Opener-Policy', value: 'same-origin', override: true },
          { header: 'Permissions-Policy', value: 'camera=(), microphone=(), geolocation=()', override: true },
        ],
      },
    });

    const fallback = new EdgeFunction(this, 'SpaFallback', {
      code: FunctionCode.fromInline(SPA_FALLBACK),
      runtime: FunctionRuntime.JS_2_0,
      comment: 'Remote Worker console: paths without an extension are index.html',
    });

    this.distribution = new Distribution(this, 'Cdn', {
      comment: 'Remote Worker console',
      defaultRootObject: 'index.html',
      httpVersion: HttpVersion.HTTP2_AND_3,
      enableLogging: true,
      // exactOptionalPropertyTypes rejects a Bucket for IBucket (CDK's optional props); the casts only widen.
      logBucket: this.accessLogs as IBucket,
      logFilePrefix: 'cloudfront/',
      ...(props.domain === undefined
        ? {}
        : {
            domainNames: [props.domain.name],
            // Only a custom certificate can raise it; the default one's policy is CloudFront's (TLSv1).
            minimumProtocolVersion: SecurityPolicyProtocol.TLS_V1_2_2021,
            certificate: Certificate.fromCertificateArn(this, 'Certificate', props.domain.certificateArn),
          }),
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.bucket as IBucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        responseHeadersPolicy: this.headers,
        compress: true,
        functionAssociations: [{ function: fallback, eventType: FunctionEventType.VIEWER_REQUEST }],
      },
    });
    this.origin = `https://${props.domain?.name ?? this.distribution.distributionDomainName}`;
  }

  /**
   * Deploys the built console and its `config.json`. The hashed files of
   * `static/` go first, cached for a year and never pruned (a tab still on the
   * previous build can load its chunks); then `index.html` and `config.json`,
   * revalidated on every load, with a CloudFront invalidation of both.
   */
  deploy(config: ConsoleRuntimeConfig): void {
    const built = new Asset(this, 'Built', {
      path: this.props.consoleDir,
      bundling: {
        // Never used: tryBundle builds locally or throws, so synth never needs Docker.
        image: DockerImage.fromRegistry('node:22-slim'),
        local: { tryBundle: (outputDir) => buildConsole(this.props.consoleDir, outputDir) },
      },
    });
    const logGroup = new LogGroup(this, 'DeploymentLogs', {
      retention: this.props.logRetention,
      removalPolicy: this.props.removalPolicy,
    });
    const role = new Role(this, 'DeploymentRole', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: 'Remote Worker console: copies the built console into its bucket (aws-s3-deployment)',
    });
    logGroup.grantWrite(role);
    // What `aws s3 sync` and the invalidation need, named action by action: aws-s3-deployment's own grants
    // (s3:GetObject*, s3:List*, s3:DeleteObject*, cloudfront:* on every resource) are kept off the role.
    role.addToPolicy(
      new PolicyStatement({
        actions: ['s3:GetObject'],
        // The bootstrap bucket's staged assets: the build and config.json (whose key only CDK knows).
        resources: [built.bucket.arnForObjects('*')],
      }),
    );
    role.addToPolicy(new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }));
    role.addToPolicy(
      new PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: [this.bucket.arnForObjects('*')],
      }),
    );
    role.addToPolicy(
      new PolicyStatement({
        actions: ['cloudfront:CreateInvalidation', 'cloudfront:GetInvalidation'],
        resources: [this.distribution.distributionArn],
      }),
    );
    this.deploymentRole = role;
    const handlerRole = role.withoutPolicyUpdates();
    const source = Source.bucket(built.bucket, built.s3ObjectKey);
    const files = new BucketDeployment(this, 'DeployFiles', {
      sources: [source],
      destinationBucket: this.bucket as IBucket,
      include: ['static/*'],
      exclude: ['*'],
      prune: false,
      cacheControl: [CacheControl.fromString('public, max-age=31536000, immutable')],
      logGroup,
      role: handlerRole,
    });
    const entry = new BucketDeployment(this, 'DeployEntry', {
      sources: [source, Source.jsonData('config.json', config)],
      destinationBucket: this.bucket as IBucket,
      exclude: ['static/*'],
      cacheControl: [CacheControl.noCache()],
      distribution: this.distribution,
      distributionPaths: ['/', '/index.html', '/config.json'],
      logGroup,
      role: handlerRole,
    });
    entry.node.addDependency(files);
  }
}

/** aws-s3-deployment's handler: one singleton function per stack, made at the stack's root. */
export function deploymentHandler(scope: Construct): IFunction | undefined {
  return Stack.of(scope).node.children.find((c): c is IFunction =>
    c.node.id.startsWith('Custom::CDKBucketDeployment'),
  );
}

/**
 * `npm run build --prefix console` (type check, API types check, Vite, the size budget), then its `dist/`.
 * Its output goes to stderr: the CDK app's stdout is the CLI's.
 */
function buildConsole(consoleDir: string, outputDir: string): boolean {
  if (!existsSync(join(consoleDir, 'node_modules'))) {
    throw new Error(`The console's dependencies are missing: run \`npm ci --prefix ${consoleDir}\` first`);
  }
  execFileSync('npm', ['run', 'build', '--prefix', consoleDir], { stdio: ['ignore', 2, 2] });
  cpSync(join(consoleDir, 'dist'), outputDir, { recursive: true });
  return true;
}

/** `https://<api id>.execute-api.<region>.<suffix>` of any HTTP API of this stack's region. */
export function regionalApiPattern(scope: Construct): string {
  const stack = Stack.of(scope);
  return `https://*.execute-api.${stack.region}.${stack.urlSuffix}`;
}
