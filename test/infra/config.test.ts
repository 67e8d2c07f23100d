import { describe, expect, it } from 'vitest';
import { EnvironmentConfigError, loadEnvironmentConfig } from '../../infra/config.ts';
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
});
