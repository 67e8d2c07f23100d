import { describe, expect, it } from 'vitest';
import { buildAwsDeps } from '../../../shared/composition/aws.ts';
import { submitApiDeps } from '../../../shared/composition/lambda/submit-deps.ts';
import { LauncherUnavailableError } from '../../../shared/domain/errors.ts';
import type { Run } from '../../../shared/domain/run.ts';

/*
 * The submits' composition (DynamoDB, S3, SQS only) plans runs against the
 * runners the settings make available, without building a launcher: it must
 * accept exactly the runners the full root (the dispatcher's) builds. No SDK
 * call is made here — constructing the deps calls nothing.
 */

const complete = {
  RUNS_TABLE: 'runs',
  DISPATCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/rw-dispatch',
  ASSET_BUCKET: 'rw-assets',
  LOG_GROUP: '/remote-worker/runs',
  AWS_REGION: 'eu-west-1',
  LOG_LEVEL: 'SILENT',
};

const CONFIGURATIONS: Record<string, Record<string, string>> = {
  'nothing configured': {},
  'the relay': { RELAY_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/rw-relay' },
  'ECS, half set': { ANSIBLE_ECS_CLUSTER: 'remote-worker' },
  'ECS, complete': {
    ANSIBLE_ECS_CLUSTER: 'remote-worker',
    ANSIBLE_ECS_SUBNET_ID: 'subnet-1,subnet-2',
    ECS_TASK_DEFINITIONS: '{"chrweav/ansible-cloud":"remote-worker-ansible-cloud"}',
  },
  'ACI, half set': { AZURE_RESOURCE_GROUP: 'rg-runners' },
  'ACI and Cloud Run': {
    AZURE_RESOURCE_GROUP: 'rg-runners',
    AZURE_SUBSCRIPTION_ID: '00000000-0000-0000-0000-000000000000',
    AZURE_LOCATION: 'westeurope',
    GCP_PROJECT_ID: 'my-project',
    GCP_ANSIBLE_CLOUD_RUN_REGION: 'europe-west1',
  },
};

describe('the submits composition', () => {
  it.each(Object.entries(CONFIGURATIONS))(
    'plans with the runners the dispatcher builds launchers for: %s',
    (_name, extra) => {
      const env = { ...complete, ...extra };
      const full = buildAwsDeps(env);
      const submit = submitApiDeps(env);

      expect(Object.keys(submit.launchers).sort()).toEqual(Object.keys(full.launchers).sort());
      expect(submit.relay).toEqual(full.relay);
    },
  );

  it('the check sees a difference: the configurations above do not all have the same runners', () => {
    const sets = Object.values(CONFIGURATIONS).map((extra) =>
      Object.keys(submitApiDeps({ ...complete, ...extra }).launchers)
        .sort()
        .join(','),
    );
    expect(new Set(sets).size).toBeGreaterThan(2);
  });

  it('never acts on a task or reads output: its launchers and log reader refuse with LauncherUnavailableError', async () => {
    const deps = submitApiDeps({ ...complete, ...CONFIGURATIONS['ECS, complete'] });
    const run = { id: 'r1' } as Run;

    await expect(deps.launchers.ecs?.status('ecs:x', run)).rejects.toBeInstanceOf(LauncherUnavailableError);
    await expect(deps.logs.read('r1')).rejects.toBeInstanceOf(LauncherUnavailableError);
  });

  it('keeps submitted passwords under RUN_SECRETS_PREFIX only when it is set, and tells its names apart without loading Secrets Manager', () => {
    expect(submitApiDeps(complete).runSecrets).toBeUndefined();
    const deps = submitApiDeps({ ...complete, RUN_SECRETS_PREFIX: 'remote-worker/dev/runs/' });

    expect(deps.runSecrets?.owns('remote-worker/dev/runs/r1/ansible_password')).toBe(true);
    expect(deps.runSecrets?.owns('remote-worker/dev/db-password')).toBe(false);
  });
});
