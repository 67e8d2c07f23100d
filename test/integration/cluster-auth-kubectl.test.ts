import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { TokenCredential } from '@azure/identity';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AKS_SCOPE } from '../../shared/adapters/cluster-auth/aks-token.ts';
import { CloudClusterAuth } from '../../shared/adapters/cluster-auth/cluster-auth.ts';
import type { AwsCredentials } from '../../shared/adapters/cluster-auth/eks-token.ts';
import { GKE_SCOPES } from '../../shared/adapters/cluster-auth/gke-token.ts';
import type { ClusterTarget } from '../../shared/domain/target.ts';
import {
  type FakeKubeDiscovery,
  startFakeKubeDiscovery,
  verifyEksToken,
} from '../support/fake-kube-discovery.ts';
import { testTls } from '../support/tls.ts';

/*
 * Token-prepared kubeconfigs driven through the REAL kubectl on this machine
 * (/usr/bin/kubectl, the dispatcher that asks /version first and then runs a
 * bundled kubectl) against a loopback HTTPS API server with a private CA
 * (test/support/fake-kube-discovery.ts). kubectl runs with PATH pointing at
 * an empty directory, so `aws`, `kubelogin` and `gke-gcloud-auth-plugin` —
 * some of which exist on this machine — cannot be found: an exec block that
 * survived preparation makes kubectl fail.
 *
 * Where the fake differs from a real cluster — what this does not prove:
 * - Authentication is the fake's rule, not the cluster's: for AKS and GKE it
 *   accepts exactly the token the test credential minted (Entra ID and Google
 *   validate signatures and audiences; these tokens are opaque strings here).
 *   For EKS it runs an independent SigV4 check of the presigned STS URL, with
 *   the test's key and this cluster's name as `x-k8s-aws-id` — what STS and
 *   the EKS authenticator do — but no request leaves for STS, and IAM access
 *   entries / aws-auth mapping are not modelled.
 * - Discovery is the legacy form only (kubectl falls back from aggregated
 *   discovery, as with an older server); only /version, /api, /apis, /api/v1
 *   and pods exist; no authorization (RBAC), no watch, no Table output.
 */

const NOW_MS = Date.now();
const AWS: AwsCredentials = {
  accessKeyId: 'AKIAKUBECTLTEST00001',
  secretAccessKey: 'kubectl-test-secret-key',
};
const ENTRA_TOKEN = 'eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiI2ZGFlNDJmOCJ9.aks-test-signature';
const GOOGLE_TOKEN = 'ya29.gke-test-access-token';

let api: FakeKubeDiscovery;
let work: string;
let kubectl: string;
let emptyBin: string;
const tokenRequests: { aks: (string | string[])[]; gke: (readonly string[])[] } = { aks: [], gke: [] };

/** kubectl from the test's PATH, as an absolute path, so it can run with an empty PATH. */
function findKubectl(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const candidate = join(dir, 'kubectl');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  throw new Error('kubectl is not on PATH: this suite drives the real kubectl');
}

beforeAll(async () => {
  kubectl = findKubectl();
  api = await startFakeKubeDiscovery({ tls: testTls(), pods: ['runner-01', 'runner-02'] });
  work = mkdtempSync(join(tmpdir(), 'rw-cluster-auth-'));
  emptyBin = mkdtempSync(join(work, 'bin-'));
});
afterAll(async () => {
  await api?.close();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});
beforeEach(() => {
  api.requests.length = 0;
  api.authenticate(() => false);
});

const clusterAuth = new CloudClusterAuth({
  awsCredentials: async () => AWS,
  azureCredential: {
    getToken: async (scopes) => {
      tokenRequests.aks.push(scopes);
      return { token: ENTRA_TOKEN, expiresOnTimestamp: NOW_MS + 3_600_000 };
    },
  } satisfies TokenCredential,
  googleAccessToken: async (scopes) => {
    tokenRequests.gke.push(scopes);
    return GOOGLE_TOKEN;
  },
});

interface Kubectl {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Write the kubeconfig to a 0600 file and run kubectl on it with a fresh discovery cache and an empty PATH. */
function runKubectl(kubeconfigText: string, args: readonly string[]): Promise<Kubectl> {
  const dir = mkdtempSync(join(work, 'run-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(file, kubeconfigText, { mode: 0o600 });
  expect(statSync(file).mode & 0o777).toBe(0o600);
  return new Promise((resolve) => {
    execFile(
      kubectl,
      ['--kubeconfig', file, '--cache-dir', join(dir, 'cache'), '--request-timeout', '10s', ...args],
      { env: { PATH: emptyBin, HOME: dir }, timeout: 15_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

const target = (provider: 'eks' | 'aks' | 'gke', extra: Partial<ClusterTarget> = {}): ClusterTarget => ({
  id: `tgt-${provider}`,
  kind: 'cluster',
  cloud: provider === 'eks' ? 'aws' : provider === 'aks' ? 'azure' : 'gcp',
  name: `prod-${provider}`,
  provider,
  createdAt: '2026-11-01T00:00:00.000Z',
  updatedAt: '2026-11-01T00:00:00.000Z',
  ...extra,
});

/** Kubeconfigs as `aws eks update-kubeconfig`, `az aks get-credentials` + `kubelogin convert-kubeconfig` and `gcloud container clusters get-credentials` write them. */
const stored = {
  eks: () => {
    const arn = 'arn:aws:eks:eu-west-1:111122223333:cluster/prod-eks';
    return `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${api.caData}
    server: ${api.server}
  name: ${arn}
contexts:
- context:
    cluster: ${arn}
    user: ${arn}
  name: ${arn}
current-context: ${arn}
kind: Config
preferences: {}
users:
- name: ${arn}
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - eu-west-1
      - eks
      - get-token
      - --cluster-name
      - prod-eks
      - --output
      - json
      command: aws
`;
  },
  aks: () => `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${api.caData}
    server: ${api.server}
  name: prod-aks
contexts:
- context:
    cluster: prod-aks
    user: clusterUser_rg-prod_prod-aks
  name: prod-aks
current-context: prod-aks
kind: Config
preferences: {}
users:
- name: clusterUser_rg-prod_prod-aks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - get-token
      - --login
      - azurecli
      - --server-id
      - 6dae42f8-4368-4678-94ff-3960e28e3630
      command: kubelogin
      env: null
      installHint: |
        kubelogin is not installed which is required to connect to AAD enabled cluster.
      provideClusterInfo: false
`,
  gke: () => `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: ${api.caData}
    server: ${api.server}
  name: gke_acme-prod_europe-west1_prod-gke
contexts:
- context:
    cluster: gke_acme-prod_europe-west1_prod-gke
    user: gke_acme-prod_europe-west1_prod-gke
  name: gke_acme-prod_europe-west1_prod-gke
current-context: gke_acme-prod_europe-west1_prod-gke
kind: Config
preferences: {}
users:
- name: gke_acme-prod_europe-west1_prod-gke
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following
        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin
      provideClusterInfo: true
`,
};

const PLUGIN = { eks: 'aws', aks: 'kubelogin', gke: 'gke-gcloud-auth-plugin' } as const;

/** What the API server accepts for each provider. */
const acceptFor = {
  eks: (token: string) =>
    verifyEksToken(token, {
      clusterName: 'prod-eks',
      region: 'eu-west-1',
      accessKeyId: AWS.accessKeyId,
      secretAccessKey: AWS.secretAccessKey,
      nowMs: Date.now(),
    }) === undefined,
  aks: (token: string) => token === ENTRA_TOKEN,
  gke: (token: string) => token === GOOGLE_TOKEN,
};

const tokenIn = (kubeconfigText: string): string => {
  const match = /^\s+token: (\S+)$/m.exec(kubeconfigText);
  expect(match, 'the prepared kubeconfig carries a token').not.toBeNull();
  return match![1]!;
};

describe.each(['eks', 'aks', 'gke'] as const)('a %s kubeconfig with kubectl', (provider) => {
  it(`fails unprepared: the ${PLUGIN[provider]} exec plugin cannot run`, async () => {
    api.authenticate(acceptFor[provider]);

    const result = await runKubectl(stored[provider](), ['get', '--raw', '/api/v1/namespaces/default/pods']);

    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`executable ${PLUGIN[provider]} not found`);
    expect(api.requests.filter((r) => r.status === 200)).toEqual([]);
  });

  it('lists pods once prepared, every request carrying exactly the minted token', async () => {
    api.authenticate(acceptFor[provider]);
    const prepared = await clusterAuth.prepare(target(provider), stored[provider]());
    const token = tokenIn(prepared);

    const result = await runKubectl(prepared, ['get', 'pods', '-n', 'default', '-o', 'name']);

    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(['pod/runner-01', 'pod/runner-02']);
    const paths = api.requests.map((r) => new URL(r.url, 'https://x').pathname);
    expect(paths).toEqual(
      expect.arrayContaining(['/api', '/apis', '/api/v1', '/api/v1/namespaces/default/pods']),
    );
    expect(new Set(api.requests.map((r) => r.token))).toEqual(new Set([token]));
    expect(api.requests.every((r) => r.status === 200)).toBe(true);
    expect(prepared).not.toMatch(/exec:|command:/);
  });

  it('reads a raw path once prepared', async () => {
    api.authenticate(acceptFor[provider]);
    const prepared = await clusterAuth.prepare(target(provider), stored[provider]());

    const result = await runKubectl(prepared, ['get', '--raw', '/api/v1/namespaces/apps/pods/runner-02']);

    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).metadata).toMatchObject({ name: 'runner-02', namespace: 'apps' });
  });
});

describe('what the API server received', () => {
  it('asked the credentials for the AKS scope and the GKE scopes only', async () => {
    tokenRequests.aks.length = 0;
    tokenRequests.gke.length = 0;

    await clusterAuth.prepare(target('aks'), stored.aks());
    await clusterAuth.prepare(target('gke'), stored.gke());

    expect(tokenRequests.aks).toEqual([AKS_SCOPE]);
    expect(tokenRequests.gke).toEqual([GKE_SCOPES]);
  });

  it('got an EKS token that decodes to a presigned STS URL carrying the cluster header', async () => {
    api.authenticate(acceptFor.eks);
    const prepared = await clusterAuth.prepare(target('eks'), stored.eks());

    const result = await runKubectl(prepared, ['get', '--raw', '/version']);

    expect(result.code).toBe(0);
    // The dispatcher asks /version, then the bundled kubectl asks again: the same token both times.
    const received = [...new Set(api.requests.map((r) => r.token))];
    expect(received).toEqual([tokenIn(prepared)]);
    const url = new URL(Buffer.from(received[0]!.slice('k8s-aws-v1.'.length), 'base64url').toString('utf8'));
    expect(url.origin).toBe('https://sts.eu-west-1.amazonaws.com');
    expect(url.searchParams.get('Action')).toBe('GetCallerIdentity');
    expect(url.searchParams.get('Version')).toBe('2011-06-15');
    expect(url.searchParams.get('X-Amz-Expires')).toBe('60');
    expect(url.searchParams.get('X-Amz-SignedHeaders')?.split(';')).toContain('x-k8s-aws-id');
  });

  it('refuses an EKS token signed for another cluster, so kubectl fails', async () => {
    api.authenticate(acceptFor.eks);
    const prepared = await clusterAuth.prepare(target('eks', { clusterName: 'other-eks' }), stored.eks());

    const result = await runKubectl(prepared, ['get', 'pods', '-o', 'name']);

    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Unauthorized|must be logged in/);
    expect(api.requests.length).toBeGreaterThan(0);
    expect(api.requests.every((r) => r.status === 401)).toBe(true);
  });

  it('refuses a token the server does not know, so kubectl fails', async () => {
    api.authenticate((token) => token === 'some-other-token');
    const prepared = await clusterAuth.prepare(target('gke'), stored.gke());

    const result = await runKubectl(prepared, ['get', '--raw', '/api/v1/namespaces/default/pods']);

    expect(result.code).not.toBe(0);
    expect(api.requests.every((r) => r.token === GOOGLE_TOKEN && r.status === 401)).toBe(true);
  });
});
