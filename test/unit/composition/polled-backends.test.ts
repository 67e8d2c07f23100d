import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { POLLED_BACKENDS } from '../../../shared/app/poll-backends.ts';
import { buildAwsDeps } from '../../../shared/composition/aws.ts';
import { pollsAnyBackend } from '../../../shared/composition/lambda/polled-backends.ts';
import { SettingsInvalidError } from '../../../shared/domain/errors.ts';

const BASE = {
  RUNS_TABLE: 'runs',
  DISPATCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111111111111/dispatch',
  ASSET_BUCKET: 'assets',
  LOG_GROUP: 'runs',
  AWS_REGION: 'eu-west-1',
  LOG_LEVEL: 'SILENT',
};
const kubeconfig = join(mkdtempSync(join(tmpdir(), 'rw-polled-')), 'kubeconfig');
writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');

const ENVIRONMENTS: Record<string, Record<string, string>> = {
  'no polled backend': {},
  'ECS only': {
    ECS_TASK_DEFINITIONS: '{"chrweav/ansible-cloud":"rw-ansible-cloud"}',
    ANSIBLE_ECS_CLUSTER: 'rw',
    ANSIBLE_ECS_SUBNET_ID: 'subnet-1',
  },
  'ACI, half set': { AZURE_RESOURCE_GROUP: 'rg-runners' },
  ACI: {
    AZURE_RESOURCE_GROUP: 'rg-runners',
    AZURE_SUBSCRIPTION_ID: '00000000-0000-0000-0000-000000000000',
    AZURE_LOCATION: 'westeurope',
  },
  'Cloud Run': { GCP_PROJECT_ID: 'my-project', GCP_ANSIBLE_CLOUD_RUN_REGION: 'europe-west1' },
  Kubernetes: { KUBERNETES_KUBECONFIG: kubeconfig },
};

describe('pollsAnyBackend', () => {
  it.each(Object.entries(ENVIRONMENTS))(
    '%s: agrees with the launchers the whole composition builds',
    (_name, env) => {
      const source = { ...BASE, ...env };
      const launchers = buildAwsDeps(source).launchers;
      expect(pollsAnyBackend(source)).toBe(POLLED_BACKENDS.some((b) => launchers[b] !== undefined));
    },
  );

  it('answers both ways among those environments', () => {
    expect(pollsAnyBackend({ ...BASE })).toBe(false);
    expect(pollsAnyBackend({ ...BASE, ...ENVIRONMENTS.ACI })).toBe(true);
    expect(pollsAnyBackend({ ...BASE, ...ENVIRONMENTS.Kubernetes })).toBe(true);
  });

  it('refuses a bad environment as the composition does', () => {
    expect(() => pollsAnyBackend({ ...BASE, RUNS_TABLE: '' })).toThrow(SettingsInvalidError);
  });
});
