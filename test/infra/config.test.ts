import { describe, expect, it } from 'vitest';
import { consoleScopes, EnvironmentConfigError, loadEnvironmentConfig } from '../../infra/config.ts';
import { cdkContext } from './synth.ts';

const environments = cdkContext().environments as Record<string, Record<string, unknown>>;
const dev = (): Record<string, unknown> => structuredClone(environments.dev ?? {});

/** Load and hand back the error, failing the test when none is thrown. */
function configError(envName: unknown, envs: unknown): EnvironmentConfigError {
  try {
    loadEnvironmentConfig(envName, envs);
  } catch (error) {
    if (error instanceof EnvironmentConfigError) return error;
    throw error;
  }
  throw new Error('loadEnvironmentConfig accepted the context');
}

describe('loadEnvironmentConfig', () => {
  it('loads both environments of cdk.json', () => {
    const devConfig = loadEnvironmentConfig('dev', environments);
    const prodConfig = loadEnvironmentConfig('prod', environments);

    expect(devConfig).toMatchObject({ name: 'dev', isDev: true, secretsPrefix: 'remote-worker/dev/' });
    expect(prodConfig).toMatchObject({ name: 'prod', isDev: false, secretsPrefix: 'remote-worker/prod/' });
    expect(prodConfig.parsedSettings.max_timeout_seconds).toBe(14_400);
    expect(devConfig.parsedSettings.k8s_runner_image).toBe('dtzar/helm-kubectl');
  });

  it('asks for -c env=<name> and lists the environments when none is chosen', () => {
    expect(configError(undefined, environments).message).toBe(
      'Choose an environment with -c env=<name>; cdk.json defines: dev, prod',
    );
  });

  it('names an environment cdk.json does not define', () => {
    expect(configError('staging', environments).message).toBe(
      'No context.environments.staging in cdk.json; it defines: dev, prod',
    );
  });

  it('names every missing key, nested ones included', () => {
    const broken = dev();
    delete broken.account;
    delete broken.alarmEmail;
    delete (broken.network as Record<string, unknown>).vpcId;

    const message = configError('dev', { dev: broken }).message;

    expect(message).toContain('context.environments.dev.account: missing');
    expect(message).toContain('context.environments.dev.alarmEmail: missing');
    expect(message).toContain('context.environments.dev.network.vpcId: missing');
  });

  it('checks runner settings with the application schema, naming the key', () => {
    const broken = dev();
    broken.settings = { ansible_runner_aws: 'lambda', ansible_runnr: 'ecs' };

    const message = configError('dev', { dev: broken }).message;

    expect(message).toContain('context.environments.dev.settings.ansible_runner_aws');
    expect(message).toContain('ansible_runnr');
  });

  it('refuses settings the stack computes itself', () => {
    const broken = dev();
    broken.settings = { ansible_ecs_subnet_id: 'subnet-0123456789abcdef0' };

    expect(configError('dev', { dev: broken }).message).toContain(
      'context.environments.dev.settings.ansible_ecs_subnet_id: set by the stack',
    );
  });

  it('wants exactly one way to assume the relay role', () => {
    const both = dev();
    both.relay = {
      principalArn: 'arn:aws:iam::111111111111:role/relay',
      rolesAnywhere: {
        trustAnchorArn:
          'arn:aws:rolesanywhere:eu-west-1:111111111111:trust-anchor/6f1c2b7e-0d4a-4c39-9a61-3f2e8b5d7c10',
      },
    };
    const neither = dev();
    neither.relay = {};

    for (const broken of [both, neither]) {
      expect(configError('dev', { dev: broken }).message).toContain(
        'context.environments.dev.relay: set exactly one of principalArn or rolesAnywhere',
      );
    }
  });

  it('wants one availability zone per runner subnet', () => {
    const broken = dev();
    (broken.network as Record<string, unknown>).availabilityZones = ['eu-west-1a'];

    expect(configError('dev', { dev: broken }).message).toContain(
      'context.environments.dev.network.availabilityZones: needs one zone per runner subnet (2)',
    );
  });

  describe('console', () => {
    const prod = (): Record<string, any> => structuredClone(environments.prod ?? {});

    it('asks for scopes openid plus the ones the API requires, unless the operator names them', () => {
      const config = loadEnvironmentConfig('prod', environments);

      expect(config.console?.oidc).toEqual({ clientId: '0oa1remoteworkerconsole', bearer: 'access_token' });
      expect(consoleScopes(config)).toEqual(['openid', 'remote-worker/runs']);
    });

    it('needs jwt: a browser cannot sign SigV4 requests', () => {
      const broken = dev();
      broken.console = { oidc: { clientId: 'console' } };

      expect(configError('dev', { dev: broken }).message).toContain(
        'context.environments.dev.console: needs jwt (the console signs in with OIDC against jwt.issuer',
      );
    });

    it('refuses scopes that leave out openid or a scope the authorizer requires', () => {
      const broken = prod();
      broken.console.oidc.scopes = ['profile'];

      const message = configError('prod', { prod: broken }).message;

      expect(message).toContain('context.environments.prod.console.oidc.scopes: must include openid');
      expect(message).toContain(
        'context.environments.prod.console.oidc.scopes: must include the scopes the API requires (jwt.scopes): remote-worker/runs',
      );
    });

    it('refuses an ID token as bearer unless the client id is an audience and no scope is required', () => {
      const broken = prod();
      broken.console.oidc.bearer = 'id_token';

      expect(configError('prod', { prod: broken }).message).toContain(
        "context.environments.prod.console.oidc.bearer: an ID token's audience is the client id; add 0oa1remoteworkerconsole to jwt.audience",
      );
      expect(configError('prod', { prod: broken }).message).toContain(
        'context.environments.prod.console.oidc.bearer: an ID token carries no scopes, and the authorizer requires jwt.scopes',
      );
      broken.jwt.audience.push('0oa1remoteworkerconsole');
      broken.jwt.scopes = [];
      expect(loadEnvironmentConfig('prod', { prod: broken }).console?.oidc.bearer).toBe('id_token');
    });

    it('wants a custom domain with its us-east-1 certificate, both or neither', () => {
      const broken = prod();
      broken.console.domainName = 'console.example.com';
      expect(configError('prod', { prod: broken }).message).toContain(
        'context.environments.prod.console: set both domainName and certificateArn, or neither',
      );
      broken.console.certificateArn =
        'arn:aws:acm:eu-west-1:222222222222:certificate/0b8d6f7e-3c2a-4e1f-9d5b-7a6c5e4d3b2a';
      expect(configError('prod', { prod: broken }).message).toContain(
        'context.environments.prod.console.certificateArn: must be an ACM certificate ARN in us-east-1',
      );
    });
  });
});
