import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CfnElement } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_HEADERS, BROWSER_METHODS } from '../../infra/constructs/control-plane-api.ts';
import { CERTIFICATE_ARN, cdkContext, type Synthesized, synth, withDomain } from './synth.ts';

type Json = any;

const environments = cdkContext().environments as Record<string, Record<string, Json>>;
const prod = environments.prod ?? {};
const ISSUER_ORIGIN = new URL(prod.jwt.issuer).origin;

function helpers(s: Synthesized) {
  const resources: Record<string, Json> = s.template.toJSON().Resources;
  const ofType = (type: string): [string, Json][] =>
    Object.entries(resources).filter(([, r]) => r.Type === type);
  /** The properties of the one resource of `type` (fails unless there is exactly one). */
  const single = (type: string): Json => {
    const found = ofType(type);
    expect(found.map(([id]) => id)).toHaveLength(1);
    return found[0]?.[1].Properties;
  };
  const idOf = (construct: IConstruct): string =>
    s.stack.getLogicalId(construct.node.defaultChild as CfnElement);
  return { resources, ofType, single, idOf };
}

/** A string CloudFormation builds with Fn::Join, references written `<LogicalId[.Attr]>`. */
function flat(value: Json): string {
  if (typeof value === 'string') return value;
  if (value?.['Fn::Join'] !== undefined) {
    const [delimiter, items] = value['Fn::Join'];
    return (items as Json[]).map(flat).join(delimiter);
  }
  if (value?.Ref === 'AWS::URLSuffix') return 'amazonaws.com';
  if (value?.Ref === 'AWS::Region') return 'eu-west-1';
  if (value?.Ref === 'AWS::Partition') return 'aws';
  if (value?.Ref === 'AWS::AccountId') return '222222222222';
  if (value?.Ref !== undefined) return `<${value.Ref}>`;
  if (value?.['Fn::GetAtt'] !== undefined) return `<${value['Fn::GetAtt'].join('.')}>`;
  return JSON.stringify(value);
}

const csp = (policy: Json): Map<string, string[]> =>
  new Map(
    flat(policy.ResponseHeadersPolicyConfig.SecurityHeadersConfig.ContentSecurityPolicy.ContentSecurityPolicy)
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name ?? '', values]),
  );

describe('console site (prod: the distribution’s own domain)', () => {
  let s: Synthesized;
  let h: ReturnType<typeof helpers>;

  beforeAll(() => {
    s = synth('prod');
    h = helpers(s);
  }, 120_000);

  it('keeps the bucket private and lets only this distribution read it, through origin access control', () => {
    const site = s.stack.console;
    if (site === undefined) throw new Error('prod has a console');
    const bucketId = h.idOf(site.bucket);
    const distributionId = h.idOf(site.distribution);

    expect(h.resources[bucketId].Properties.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    const oac = h.single('AWS::CloudFront::OriginAccessControl').OriginAccessControlConfig;
    expect(oac).toMatchObject({ OriginAccessControlOriginType: 's3', SigningBehavior: 'always' });
    expect(h.ofType('AWS::CloudFront::CloudFrontOriginAccessIdentity')).toEqual([]);
    const [origin] = h.single('AWS::CloudFront::Distribution').DistributionConfig.Origins;
    expect(origin.OriginAccessControlId).toBeDefined();
    expect(origin.S3OriginConfig.OriginAccessIdentity).toBe('');

    const policy = h
      .ofType('AWS::S3::BucketPolicy')
      .find(([, p]) => p.Properties.Bucket.Ref === bucketId)?.[1].Properties.PolicyDocument;
    const allows = policy.Statement.filter((st: Json) => st.Effect === 'Allow');
    expect(allows).toEqual([
      expect.objectContaining({
        Principal: { Service: 'cloudfront.amazonaws.com' },
        Action: 's3:GetObject',
        Condition: {
          StringEquals: {
            'AWS:SourceArn': expect.objectContaining({ 'Fn::Join': expect.anything() }),
          },
        },
      }),
    ]);
    expect(JSON.stringify(allows[0].Condition)).toContain(distributionId);
    expect(policy.Statement).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
  });

  it('serves index.html at the root and for extension-less paths, over HTTPS only, with access logs', () => {
    const config = h.single('AWS::CloudFront::Distribution').DistributionConfig;

    expect(config.DefaultRootObject).toBe('index.html');
    expect(config.DefaultCacheBehavior.ViewerProtocolPolicy).toBe('redirect-to-https');
    expect(config.DefaultCacheBehavior.AllowedMethods).toEqual(['GET', 'HEAD']);
    expect(config.Logging.Bucket).toBeDefined();
    expect(config.DefaultCacheBehavior.FunctionAssociations).toEqual([
      expect.objectContaining({ EventType: 'viewer-request' }),
    ]);
    const code: string = h.single('AWS::CloudFront::Function').FunctionCode;
    // The function itself, run on the paths a browser sends.
    const handler = new Function(`${code}; return handler;`)() as (e: Json) => { uri: string };
    const rewrite = (uri: string) => handler({ request: { uri } }).uri;
    expect(rewrite('/')).toBe('/index.html');
    expect(rewrite('/runs/01J')).toBe('/index.html');
    expect(rewrite('/config.json')).toBe('/config.json');
    expect(rewrite('/static/index-abc.js')).toBe('/static/index-abc.js');
  });

  it('sends the security headers, with a CSP that lets the console call the API and the issuer only', () => {
    const policy = h.single('AWS::CloudFront::ResponseHeadersPolicy');
    const headers = policy.ResponseHeadersPolicyConfig.SecurityHeadersConfig;
    const directives = csp(policy);

    expect(headers.StrictTransportSecurity).toMatchObject({
      AccessControlMaxAgeSec: 63_072_000,
      IncludeSubdomains: true,
      Override: true,
    });
    expect(headers.ContentTypeOptions).toEqual({ Override: true });
    expect(headers.FrameOptions).toEqual({ FrameOption: 'DENY', Override: true });
    expect(headers.ReferrerPolicy).toEqual({ ReferrerPolicy: 'no-referrer', Override: true });
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('style-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    // On the distribution's own domain the API's exact origin would be a cycle (see the stack): its region only.
    expect(directives.get('connect-src')).toEqual([
      "'self'",
      'https://*.execute-api.eu-west-1.amazonaws.com',
      ISSUER_ORIGIN,
    ]);
  });

  it('lets exactly the console’s origin call the API, with the methods and headers it uses', () => {
    const cors = h.single('AWS::ApiGatewayV2::Api').CorsConfiguration;
    const site = s.stack.console;
    if (site === undefined) throw new Error('prod has a console');

    expect(cors.AllowOrigins).toHaveLength(1);
    expect(flat(cors.AllowOrigins[0])).toBe(`https://<${h.idOf(site.distribution)}.DomainName>`);
    expect(cors.AllowMethods).toEqual([...BROWSER_METHODS]);
    expect(cors.AllowHeaders).toEqual([...BROWSER_HEADERS]);
    expect(cors.AllowCredentials).toBe(false);
    expect(JSON.stringify(cors)).not.toContain('*');
    // API Gateway answers a preflight itself only while no OPTIONS (or ANY) route would take it to the authorizer.
    const methods = h
      .ofType('AWS::ApiGatewayV2::Route')
      .map(([, r]) => String(r.Properties.RouteKey).split(' ')[0]);
    expect(methods.filter((m) => m === 'OPTIONS' || m === 'ANY' || m === '$default')).toEqual([]);
    expect(new Set(methods)).toEqual(new Set(BROWSER_METHODS));
  });

  it('deploys the built files, then index.html and a config.json naming the API, the issuer and the client', () => {
    const deployments = h.ofType('Custom::CDKBucketDeployment').map(([id, r]) => ({ id, ...r }));
    const files = deployments.find((d) => d.id.includes('DeployFiles'));
    const entry = deployments.find((d) => d.id.includes('DeployEntry'));

    expect(files?.Properties).toMatchObject({
      Include: ['static/*'],
      Exclude: ['*'],
      Prune: false,
      SystemMetadata: { 'cache-control': 'public, max-age=31536000, immutable' },
    });
    expect(entry?.Properties).toMatchObject({
      Exclude: ['static/*'],
      SystemMetadata: { 'cache-control': 'no-cache' },
      DistributionPaths: ['/', '/index.html', '/config.json'],
    });
    expect(entry?.DependsOn).toEqual(expect.arrayContaining([files?.id]));

    // The config.json asset as staged, and the deploy-time values its markers stand for.
    const key = String(entry?.Properties.SourceObjectKeys[1]).replace(/\.zip$/, '');
    const staged = JSON.parse(readFileSync(join(s.app.outdir, `asset.${key}`, 'config.json'), 'utf8'));
    const markers: Record<string, Json> = entry?.Properties.SourceMarkers[1];
    const resolved = JSON.parse(
      JSON.stringify(staged).replace(/<<marker:0xbaba:\d+>>/g, (m) => flat(markers[m])),
    );
    expect(resolved).toEqual({
      apiUrl: `https://<${h.idOf(s.stack.api.api)}>.execute-api.eu-west-1.amazonaws.com/`,
      oidc: {
        issuer: prod.jwt.issuer,
        clientId: prod.console.oidc.clientId,
        scopes: ['openid', ...prod.jwt.scopes],
        bearer: 'access_token',
      },
    });
  });

  it('gives the deployment handler its own role with no managed policy, and outputs the console URL', () => {
    const site = s.stack.console;
    if (site?.deploymentRole === undefined) throw new Error('prod has a console');
    const role = h.resources[h.idOf(site.deploymentRole)].Properties;

    const roleId = h.idOf(site.deploymentRole);
    expect(role.ManagedPolicyArns).toBeUndefined();
    const [handler] = h
      .ofType('AWS::Lambda::Function')
      .filter(([id]) => id.startsWith('CustomCDKBucketDeployment'));
    expect(handler?.[1].Properties.Role).toEqual({ 'Fn::GetAtt': [roleId, 'Arn'] });
    const statements = h
      .ofType('AWS::IAM::Policy')
      .filter(([, p]) => p.Properties.Roles.some((r: Json) => r.Ref === roleId))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement)
      .map((st: Json) => ({ Action: st.Action, Resource: flat(st.Resource) }));
    // Named actions only: none of aws-s3-deployment's own wildcard grants (s3:GetObject*, s3:List*, cloudfront on *).
    expect(statements).toEqual([
      {
        Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: expect.stringContaining('DeploymentLogs'),
      },
      { Action: 's3:GetObject', Resource: 'arn:aws:s3:::cdk-hnb659fds-assets-222222222222-eu-west-1/*' },
      { Action: 's3:ListBucket', Resource: `<${h.idOf(site.bucket)}.Arn>` },
      {
        Action: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        Resource: `<${h.idOf(site.bucket)}.Arn>/*`,
      },
      {
        Action: ['cloudfront:CreateInvalidation', 'cloudfront:GetInvalidation'],
        Resource: `arn:aws:cloudfront::222222222222:distribution/<${h.idOf(site.distribution)}>`,
      },
    ]);
    expect(flat(s.template.toJSON().Outputs.ConsoleUrl.Value)).toBe(
      `https://<${h.idOf(site.distribution)}.DomainName>/`,
    );
  });
});

describe('console site (a custom domain)', () => {
  let s: Synthesized;
  let h: ReturnType<typeof helpers>;

  beforeAll(() => {
    s = synth('prod', withDomain());
    h = helpers(s);
  }, 120_000);

  it('serves the domain with its certificate and TLS 1.2 at least', () => {
    const config = h.single('AWS::CloudFront::Distribution').DistributionConfig;

    expect(config.Aliases).toEqual(['console.example.com']);
    expect(config.ViewerCertificate).toEqual({
      AcmCertificateArn: CERTIFICATE_ARN,
      MinimumProtocolVersion: 'TLSv1.2_2021',
      SslSupportMethod: 'sni-only',
    });
  });

  it('names the API’s exact origin in connect-src, and the domain in CORS', () => {
    const directives = csp(h.single('AWS::CloudFront::ResponseHeadersPolicy'));
    const cors = h.single('AWS::ApiGatewayV2::Api').CorsConfiguration;

    expect(directives.get('connect-src')).toEqual([
      "'self'",
      `<${h.idOf(s.stack.api.api)}.ApiEndpoint>`,
      ISSUER_ORIGIN,
      'https://login-tokens.example.com',
    ]);
    expect(cors.AllowOrigins).toEqual(['https://console.example.com']);
  });

  it('is cdk-nag clean without the default-certificate acknowledgement', { timeout: 60_000 }, () => {
    const report = new AwsSolutionsChecks().validateScope(s.app);

    expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources[0]?.constructPath}`)).toEqual(
      [],
    );
    const acks = s.stack.console?.distribution.node.metadata
      .filter((m) => m.type === 'aws:cdk:acknowledged-rules')
      .flatMap((m) => Object.keys(m.data as object));
    expect(acks).not.toContain('AwsSolutions-CFR4');
  });
});

describe('console site (dev: no console configured)', () => {
  it('deploys no site and allows no browser origin', () => {
    const s = synth('dev');
    const h = helpers(s);

    expect(s.stack.console).toBeUndefined();
    expect(h.ofType('AWS::CloudFront::Distribution')).toEqual([]);
    expect(h.ofType('Custom::CDKBucketDeployment')).toEqual([]);
    expect(h.single('AWS::ApiGatewayV2::Api').CorsConfiguration).toBeUndefined();
    expect(s.template.toJSON().Outputs.ConsoleUrl).toBeUndefined();
  }, 120_000);
});
