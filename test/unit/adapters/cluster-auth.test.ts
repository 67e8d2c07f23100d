import type { TokenCredential } from '@azure/identity';
import { describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { AKS_SCOPE } from '../../../shared/adapters/cluster-auth/aks-token.ts';
import {
  CloudClusterAuth,
  type CloudClusterAuthOptions,
} from '../../../shared/adapters/cluster-auth/cluster-auth.ts';
import type { AwsCredentials } from '../../../shared/adapters/cluster-auth/eks-token.ts';
import { GKE_SCOPES } from '../../../shared/adapters/cluster-auth/gke-token.ts';
import { optionValue } from '../../../shared/adapters/cluster-auth/kubeconfig.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../../shared/domain/errors.ts';
import type { ClusterTarget } from '../../../shared/domain/target.ts';
import { verifyEksToken } from '../../support/fake-kube-discovery.ts';

/*
 * CloudClusterAuth with injected credential sources (a static AWS key pair,
 * a TokenCredential object, a Google token function) — the same shapes the
 * SDK defaults have, so no SDK is mocked and nothing leaves the process. EKS
 * signatures are checked twice: against @smithy/signature-v4's own output
 * (same inputs, same token) and against an independent SigV4 verifier
 * (test/support/fake-kube-discovery.ts) that stands in for STS. What this
 * does not prove: that real STS, Entra ID or Google accept the tokens (the
 * verifier follows the published SigV4 algorithm; the other two are opaque
 * to the cluster here), nor the default credential chains themselves.
 */

const NOW_MS = Date.UTC(2026, 10, 29, 12, 34, 56);
const clock = { now: () => new Date(NOW_MS).toISOString(), nowMs: () => NOW_MS };

// Canaries: none of these may appear in a thrown error.
const CLIENT_KEY_CANARY = 'Q0FOQVJZLWNsaWVudC1rZXktZGF0YQ';
const SECRET_KEY_CANARY = 'canarySecretAccessKey/abc123+xyz';
const SESSION_CANARY = 'canarySessionToken0123456789';
const ENTRA_TOKEN = 'eyJ0eXAiOiJKV1QifQ.eyJhdWQiOiI2ZGFlNDJmOCJ9.entra-canary-signature';
const GOOGLE_TOKEN = 'ya29.google-canary-access-token';

const awsCredentials: AwsCredentials = {
  accessKeyId: 'ASIAEXAMPLEKEYID0001',
  secretAccessKey: SECRET_KEY_CANARY,
  sessionToken: SESSION_CANARY,
};

const target = (provider: ClusterTarget['provider'], extra: Partial<ClusterTarget> = {}): ClusterTarget => ({
  id: 'tgt-7',
  kind: 'cluster',
  cloud: provider === 'aks' ? 'azure' : provider === 'gke' ? 'gcp' : provider === 'eks' ? 'aws' : 'local',
  name: 'prod-cluster',
  provider,
  createdAt: '2026-11-01T00:00:00.000Z',
  updatedAt: '2026-11-01T00:00:00.000Z',
  ...extra,
});

/** A kubeconfig with one cluster and context; `user` is the YAML of the user's `user:` mapping. */
const kubeconfig = (user: string, options: { extra?: string } = {}): string =>
  `apiVersion: v1
kind: Config
preferences:
  colors: true
clusters:
- name: prod
  cluster:
    server: https://prod.example.test:443
    certificate-authority-data: ${Buffer.from('-----BEGIN CERTIFICATE-----\nfake\n').toString('base64')}
    tls-server-name: prod.internal
contexts:
- name: prod
  context:
    cluster: prod
    user: prod-user
    namespace: "on"
current-context: prod
users:
- name: prod-user
  user:
${user
  .split('\n')
  .map((line) => `    ${line}`)
  .join('\n')}
${options.extra ?? ''}`;

const EKS_EXEC = `exec:
  apiVersion: client.authentication.k8s.io/v1beta1
  command: aws
  args: [--region, eu-west-1, eks, get-token, --cluster-name, prod-eks, --output, json]
  interactiveMode: IfAvailable`;
const AKS_EXEC = `exec:
  apiVersion: client.authentication.k8s.io/v1beta1
  command: kubelogin
  args: [get-token, --login, azurecli, --server-id, 6dae42f8-4368-4678-94ff-3960e28e3630]
  interactiveMode: IfAvailable`;
const GKE_EXEC = `exec:
  apiVersion: client.authentication.k8s.io/v1beta1
  command: gke-gcloud-auth-plugin
  installHint: Install gke-gcloud-auth-plugin for use with kubectl
  provideClusterInfo: true`;

const fixedCredential = (token: string | null = ENTRA_TOKEN) => {
  const calls: { scopes: string | string[]; aborted: boolean }[] = [];
  const credential: TokenCredential = {
    getToken: async (scopes, options) => {
      calls.push({ scopes, aborted: options?.abortSignal?.aborted ?? false });
      return token === null ? null : { token, expiresOnTimestamp: NOW_MS + 3_600_000 };
    },
  };
  return { credential, calls };
};

const auth = (options: CloudClusterAuthOptions = {}) =>
  new CloudClusterAuth({
    awsCredentials: async () => awsCredentials,
    azureCredential: fixedCredential().credential,
    googleAccessToken: async () => GOOGLE_TOKEN,
    clock,
    ...options,
  });

/** The user mapping of a prepared kubeconfig, read as kubectl reads it (YAML 1.1). */
const readBack = (yaml: string) => parse(yaml, { version: '1.1' }) as Record<string, any>;
const userOf = (yaml: string, name = 'prod-user') =>
  readBack(yaml).users.find((u: { name: string }) => u.name === name).user as Record<string, unknown>;
const withoutUsers = (yaml: string) => ({ ...readBack(yaml), users: undefined });

const decodeEks = (token: string): URL => {
  expect(token.startsWith('k8s-aws-v1.')).toBe(true);
  const encoded = token.slice('k8s-aws-v1.'.length);
  expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/); // base64url, no padding
  return new URL(Buffer.from(encoded, 'base64url').toString('utf8'));
};

const eksCheck = (clusterName: string, region = 'eu-west-1') => ({
  clusterName,
  region,
  accessKeyId: awsCredentials.accessKeyId,
  secretAccessKey: awsCredentials.secretAccessKey,
  nowMs: NOW_MS,
});

async function rejection(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
}

/** Every text a thrown error offers a logger, none of which may carry a canary. */
const everythingSaid = (error: Error): string =>
  [String(error), error.message, error.stack ?? '', JSON.stringify(error), String(error.cause ?? '')].join(
    '\n',
  );

const CANARIES = [
  CLIENT_KEY_CANARY,
  SECRET_KEY_CANARY,
  SESSION_CANARY,
  ENTRA_TOKEN,
  GOOGLE_TOKEN,
  'k8s-aws-v1.',
];
const expectNoCanary = (error: Error) => {
  const said = everythingSaid(error);
  for (const canary of CANARIES) expect(said).not.toContain(canary);
};

describe('CloudClusterAuth', () => {
  describe('EKS', () => {
    it('replaces the exec block with a token and keeps clusters, contexts and the rest', async () => {
      const stored = kubeconfig(EKS_EXEC);

      const prepared = await auth().prepare(
        target('eks', { region: 'eu-west-1', clusterName: 'prod-eks' }),
        stored,
      );

      const user = userOf(prepared);
      expect(user.exec).toBeUndefined();
      expect(user.token).toMatch(/^k8s-aws-v1\./);
      expect(withoutUsers(prepared)).toEqual(withoutUsers(stored));
      expect(readBack(prepared)['current-context']).toBe('prod');
    });

    it('makes a presigned STS GetCallerIdentity URL that signs the cluster header, expiring in 60 s', async () => {
      const prepared = await auth().prepare(
        target('eks', { region: 'eu-west-1', clusterName: 'prod-eks' }),
        kubeconfig(EKS_EXEC),
      );

      const url = decodeEks(String(userOf(prepared).token));
      const q = url.searchParams;
      expect(`${url.protocol}//${url.host}${url.pathname}`).toBe('https://sts.eu-west-1.amazonaws.com/');
      expect(q.get('Action')).toBe('GetCallerIdentity');
      expect(q.get('Version')).toBe('2011-06-15');
      expect(q.get('X-Amz-Algorithm')).toBe('AWS4-HMAC-SHA256');
      expect(q.get('X-Amz-Expires')).toBe('60');
      expect(q.get('X-Amz-SignedHeaders')?.split(';').sort()).toEqual(['host', 'x-k8s-aws-id']);
      expect(q.get('X-Amz-Date')).toBe('20261129T123456Z');
      expect(q.get('X-Amz-Credential')).toBe('ASIAEXAMPLEKEYID0001/20261129/eu-west-1/sts/aws4_request');
      expect(q.get('X-Amz-Security-Token')).toBe(SESSION_CANARY);
      expect(q.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);
    });

    it('signs so that an independent SigV4 check passes for this cluster only', async () => {
      const prepared = await auth().prepare(
        target('eks', { region: 'eu-west-1', clusterName: 'prod-eks' }),
        kubeconfig(EKS_EXEC),
      );
      const token = String(userOf(prepared).token);

      expect(verifyEksToken(token, eksCheck('prod-eks'))).toBeUndefined();
      expect(verifyEksToken(token, eksCheck('other-eks'))).toBe('signature does not match');
      expect(verifyEksToken(token, { ...eksCheck('prod-eks'), secretAccessKey: 'wrong' })).toBe(
        'signature does not match',
      );
      expect(verifyEksToken(token, { ...eksCheck('prod-eks'), nowMs: NOW_MS + 16 * 60_000 })).toBe('expired');
    });

    it('makes byte for byte the token `aws eks get-token` made for the same key, cluster, region and second', async () => {
      // aws-cli 1.45.11 (botocore 1.43.11), with AWS_ACCESS_KEY_ID=AKIAKUBECTLTEST00001,
      // AWS_SECRET_ACCESS_KEY=kubectl-test-secret-key (made-up test values), at 2026-11-29T19:28:09Z:
      // aws eks get-token --cluster-name prod-eks --region eu-west-1
      const fromAwsCli =
        'k8s-aws-v1.aHR0cHM6Ly9zdHMuZXUtd2VzdC0xLmFtYXpvbmF3cy5jb20vP0FjdGlvbj1HZXRDYWxsZXJJZGVudGl0eSZWZXJzaW9uPTIwMTEtMDYtMTUmWC1BbXotQWxnb3JpdGhtPUFXUzQtSE1BQy1TSEEyNTYmWC1BbXotQ3JlZGVudGlhbD1BS0lBS1VCRUNUTFRFU1QwMDAwMSUyRjIwMjYxMTI5JTJGZXUtd2VzdC0xJTJGc3RzJTJGYXdzNF9yZXF1ZXN0JlgtQW16LURhdGU9MjAyNjExMjlUMTkyODA5WiZYLUFtei1FeHBpcmVzPTYwJlgtQW16LVNpZ25lZEhlYWRlcnM9aG9zdCUzQngtazhzLWF3cy1pZCZYLUFtei1TaWduYXR1cmU9ZTk4ZmI0MGQxZGU1ZTI4ZjllMGY5ZDMzYzBlNjRkYjZkODc2ZTU3Mzk5MzI1NDQ1YmNjMTI1N2IxOGRiNjM4Yw';
      const signedAtMs = Date.UTC(2026, 10, 29, 19, 28, 9);
      const cliAuth = auth({
        awsCredentials: async () => ({
          accessKeyId: 'AKIAKUBECTLTEST00001',
          secretAccessKey: 'kubectl-test-secret-key',
        }),
        clock: { now: () => new Date(signedAtMs).toISOString(), nowMs: () => signedAtMs },
      });

      const prepared = await cliAuth.prepare(target('eks'), kubeconfig(EKS_EXEC));

      expect(userOf(prepared).token).toBe(fromAwsCli);
      const check = { ...eksCheck('prod-eks'), accessKeyId: 'AKIAKUBECTLTEST00001', nowMs: signedAtMs };
      expect(
        verifyEksToken(fromAwsCli, { ...check, secretAccessKey: 'kubectl-test-secret-key' }),
      ).toBeUndefined();
    });

    it('gives the same token for the same clock and credentials, another for another cluster', async () => {
      const stored = kubeconfig(EKS_EXEC);
      const tokenFor = async (clusterName: string) =>
        String(
          userOf(await auth().prepare(target('eks', { region: 'eu-west-1', clusterName }), stored)).token,
        );

      const first = await tokenFor('prod-eks');
      const again = await tokenFor('prod-eks');
      const other = await tokenFor('staging-eks');

      expect(again).toBe(first);
      expect(decodeEks(other).searchParams.get('X-Amz-Signature')).not.toBe(
        decodeEks(first).searchParams.get('X-Amz-Signature'),
      );
    });

    it('takes the cluster name and region from the exec args when the target has neither', async () => {
      const prepared = await auth().prepare(target('eks'), kubeconfig(EKS_EXEC));

      expect(verifyEksToken(String(userOf(prepared).token), eksCheck('prod-eks'))).toBeUndefined();
    });

    it('prefers the target fields to the exec args, and reads --opt=value, -i and AWS_REGION', async () => {
      const exec = `exec:
  apiVersion: client.authentication.k8s.io/v1beta1
  command: aws-iam-authenticator
  args: [token, -i, from-args]
  env:
  - name: AWS_REGION
    value: us-west-2`;
      const fromArgs = await auth().prepare(target('eks'), kubeconfig(exec));
      const fromTarget = await auth().prepare(
        target('eks', { clusterName: 'from-target', region: 'ap-south-1' }),
        kubeconfig(exec),
      );

      expect(
        verifyEksToken(String(userOf(fromArgs).token), eksCheck('from-args', 'us-west-2')),
      ).toBeUndefined();
      expect(
        verifyEksToken(String(userOf(fromTarget).token), eksCheck('from-target', 'ap-south-1')),
      ).toBeUndefined();
      expect(optionValue(['eks', 'get-token', '--cluster-name=eq-form'], ['--cluster-name'])).toBe('eq-form');
    });

    it('signs for the China partition STS host in a cn- region', async () => {
      const prepared = await auth().prepare(
        target('eks', { region: 'cn-north-1', clusterName: 'cn' }),
        kubeconfig(EKS_EXEC),
      );

      expect(decodeEks(String(userOf(prepared).token)).host).toBe('sts.cn-north-1.amazonaws.com.cn');
    });

    it.each([
      [
        'no region',
        `exec:\n  command: aws\n  args: [eks, get-token, --cluster-name, prod-eks]`,
        /no region is known/,
      ],
      [
        'no cluster name',
        `exec:\n  command: aws\n  args: [--region, eu-west-1, eks, get-token]`,
        /no cluster name is known/,
      ],
      [
        'a role to assume',
        `exec:\n  command: aws\n  args: [--region, eu-west-1, eks, get-token, --cluster-name, x, --role-arn, arn:aws:iam::1:role/r]`,
        /assumes an IAM role \(--role-arn\), which is not supported/,
      ],
      [
        'a region that is not one',
        `exec:\n  command: aws\n  args: [--region, evil.example.com/x, eks, get-token, --cluster-name, x]`,
        /not an AWS region name/,
      ],
    ])('refuses an exec block with %s, before asking for credentials', async (_case, exec, reason) => {
      const credentials = vi.fn(async () => awsCredentials);

      const error = await rejection(
        auth({ awsCredentials: credentials }).prepare(target('eks'), kubeconfig(exec)),
      );

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toMatch(
        /^Could not sign a token for EKS cluster "prod-cluster" \(target tgt-7\): /,
      );
      expect(error.message).toMatch(reason);
      expect(credentials).not.toHaveBeenCalled();
    });

    it('names the step when credentials cannot be had, retryable unless none are set up', async () => {
      const flaky = Object.assign(new Error(`connect ETIMEDOUT; last token Bearer ${ENTRA_TOKEN}`), {
        name: 'TimeoutError',
      });
      const none = Object.assign(new Error('Could not load credentials from any providers'), {
        name: 'CredentialsProviderError',
      });
      const eks = target('eks', { region: 'eu-west-1', clusterName: 'prod-eks' });

      const retry = await rejection(
        auth({ awsCredentials: async () => Promise.reject(flaky) }).prepare(eks, kubeconfig(EKS_EXEC)),
      );
      const refuse = await rejection(
        auth({ awsCredentials: async () => Promise.reject(none) }).prepare(eks, kubeconfig(EKS_EXEC)),
      );

      expect(retry).toBeInstanceOf(LauncherUnavailableError);
      expect(retry.message).toBe(
        'Could not obtain AWS credentials to sign a token for EKS cluster "prod-cluster" (target tgt-7): TimeoutError: connect ETIMEDOUT; last token Bearer [redacted]',
      );
      expect(refuse).toBeInstanceOf(LaunchRejectedError);
      expect(refuse.message).toContain(
        'CredentialsProviderError: Could not load credentials from any providers',
      );
      expectNoCanary(retry);
      expectNoCanary(refuse);
    });
  });

  describe('AKS', () => {
    it('asks the credential for exactly the AKS server scope and puts the token in place of kubelogin', async () => {
      const { credential, calls } = fixedCredential();
      const stored = kubeconfig(AKS_EXEC);

      const prepared = await auth({ azureCredential: credential }).prepare(target('aks'), stored);

      expect(calls).toEqual([{ scopes: AKS_SCOPE, aborted: false }]);
      expect(AKS_SCOPE).toBe('6dae42f8-4368-4678-94ff-3960e28e3630/.default');
      expect(userOf(prepared)).toEqual({ token: ENTRA_TOKEN });
      expect(withoutUsers(prepared)).toEqual(withoutUsers(stored));
    });

    it('replaces a legacy azure auth-provider block too', async () => {
      const legacy = `auth-provider:
  name: azure
  config:
    apiserver-id: 6dae42f8-4368-4678-94ff-3960e28e3630
    client-id: 80faf920-1908-4b52-b5ef-a8e7bedfc67a
    tenant-id: 72f988bf-0000-0000-0000-2d7cd011db47
    environment: AzurePublicCloud`;

      const prepared = await auth().prepare(target('aks'), kubeconfig(legacy));

      expect(userOf(prepared)).toEqual({ token: ENTRA_TOKEN });
    });

    it('keeps a local-account kubeconfig (client certificate) byte for byte, without asking for a token', async () => {
      const { credential, calls } = fixedCredential();
      const stored = kubeconfig(
        `client-certificate-data: ${Buffer.from('cert').toString('base64')}\nclient-key-data: ${CLIENT_KEY_CANARY}\ntoken: local-account-token`,
      );

      const prepared = await auth({ azureCredential: credential }).prepare(target('aks'), stored);

      expect(prepared).toBe(stored);
      expect(calls).toEqual([]);
    });

    it('names the cluster and the step when the credential fails, scrubbing token-shaped text', async () => {
      const credential: TokenCredential = {
        getToken: async () => {
          throw Object.assign(new Error(`AADSTS7000215: Invalid client secret. Previous: ${ENTRA_TOKEN}`), {
            name: 'AuthenticationError',
            statusCode: 401,
          });
        },
      };

      const error = await rejection(
        auth({ azureCredential: credential }).prepare(target('aks'), kubeconfig(AKS_EXEC)),
      );

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toBe(
        'Could not obtain an Entra ID token for AKS cluster "prod-cluster" (target tgt-7): AuthenticationError: AADSTS7000215: Invalid client secret. Previous: [redacted]',
      );
      expect(error.cause).toBeUndefined();
      expectNoCanary(error);
    });

    it('treats an unavailable credential as not set up and a server error as worth a retry', async () => {
      const failing = (error: Error): TokenCredential => ({ getToken: async () => Promise.reject(error) });
      const unavailable = Object.assign(new Error('DefaultAzureCredential failed to retrieve a token'), {
        name: 'CredentialUnavailableError',
      });
      const outage = Object.assign(new Error('Service Unavailable'), {
        name: 'AuthenticationError',
        statusCode: 503,
      });

      const refused = await rejection(
        auth({ azureCredential: failing(unavailable) }).prepare(target('aks'), kubeconfig(AKS_EXEC)),
      );
      const retried = await rejection(
        auth({ azureCredential: failing(outage) }).prepare(target('aks'), kubeconfig(AKS_EXEC)),
      );

      expect(refused).toBeInstanceOf(LaunchRejectedError);
      expect(retried).toBeInstanceOf(LauncherUnavailableError);
    });

    it('refuses a credential that answers without a token', async () => {
      const error = await rejection(
        auth({ azureCredential: fixedCredential(null).credential }).prepare(
          target('aks'),
          kubeconfig(AKS_EXEC),
        ),
      );

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toBe(
        'Could not obtain an Entra ID token for AKS cluster "prod-cluster" (target tgt-7): the credential returned no token',
      );
    });

    it('gives up on a credential that does not answer in time, aborting it, as a retryable error', async () => {
      let signal: { readonly aborted: boolean } | undefined;
      const hanging: TokenCredential = {
        getToken: (_scopes, options) => {
          signal = options?.abortSignal;
          return new Promise(() => {});
        },
      };

      const error = await rejection(
        auth({ azureCredential: hanging, timeoutMs: 30 }).prepare(target('aks'), kubeconfig(AKS_EXEC)),
      );

      expect(error).toBeInstanceOf(LauncherUnavailableError);
      expect(error.message).toMatch(
        /Entra ID token for AKS cluster "prod-cluster" .*TimeoutError: no answer within/,
      );
      expect(signal?.aborted).toBe(true);
    });
  });

  describe('GKE', () => {
    it('asks for the cloud-platform and userinfo.email scopes and replaces the plugin with the token', async () => {
      const asked: (readonly string[])[] = [];
      const stored = kubeconfig(GKE_EXEC);

      const prepared = await auth({
        googleAccessToken: async (scopes) => {
          asked.push(scopes);
          return GOOGLE_TOKEN;
        },
      }).prepare(target('gke'), stored);

      expect(asked.map((s) => [...s].sort())).toEqual([
        ['https://www.googleapis.com/auth/cloud-platform', 'https://www.googleapis.com/auth/userinfo.email'],
      ]);
      expect(GKE_SCOPES).toHaveLength(2);
      expect(userOf(prepared)).toEqual({ token: GOOGLE_TOKEN });
      expect(withoutUsers(prepared)).toEqual(withoutUsers(stored));
    });

    it('replaces a legacy gcp auth-provider block', async () => {
      const legacy = `auth-provider:
  name: gcp
  config:
    cmd-path: /usr/lib/google-cloud-sdk/bin/gcloud
    cmd-args: config config-helper --format=json
    token-key: '{.credential.access_token}'`;

      const prepared = await auth().prepare(target('gke'), kubeconfig(legacy));

      expect(userOf(prepared)).toEqual({ token: GOOGLE_TOKEN });
    });

    it.each([
      [null, 'the credentials returned no token'],
      [undefined, 'the credentials returned no token'],
    ])('refuses a provider that returns %s', async (value, reason) => {
      const error = await rejection(
        auth({ googleAccessToken: async () => value }).prepare(target('gke'), kubeconfig(GKE_EXEC)),
      );

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toBe(
        `Could not obtain a Google access token for GKE cluster "prod-cluster" (target tgt-7): ${reason}`,
      );
    });

    it('refuses when no default credentials exist, keeping the library words', async () => {
      const error = await rejection(
        auth({
          googleAccessToken: async () => {
            throw new Error(
              'Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication',
            );
          },
        }).prepare(target('gke'), kubeconfig(GKE_EXEC)),
      );

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toContain(
        'GKE cluster "prod-cluster" (target tgt-7): Could not load the default credentials',
      );
    });
  });

  describe('users and contexts', () => {
    it('mints only for the current user; another user loses its exec block and gets nothing', async () => {
      const other = `- name: staging-user
  user:
${AKS_EXEC.split('\n')
  .map((line) => `    ${line}`)
  .join('\n')}
- name: static-user
  user:
    token: static-token
`;
      const stored = kubeconfig(AKS_EXEC, { extra: other });
      const { credential, calls } = fixedCredential();

      const prepared = await auth({ azureCredential: credential }).prepare(target('aks'), stored);

      expect(calls).toHaveLength(1);
      expect(userOf(prepared)).toEqual({ token: ENTRA_TOKEN });
      expect(userOf(prepared, 'staging-user')).toEqual({});
      expect(userOf(prepared, 'static-user')).toEqual({ token: 'static-token' });
    });

    it('replaces a stale token, tokenFile and exec together', async () => {
      const prepared = await auth().prepare(
        target('gke'),
        kubeconfig(`token: stale\ntokenFile: /var/run/token\n${GKE_EXEC}`),
      );

      expect(userOf(prepared)).toEqual({ token: GOOGLE_TOKEN });
    });

    it('gives a token to a current user with no credentials at all', async () => {
      const stored = kubeconfig('{}');

      const prepared = await auth().prepare(
        target('eks', { region: 'eu-west-1', clusterName: 'prod-eks' }),
        stored,
      );

      expect(verifyEksToken(String(userOf(prepared).token), eksCheck('prod-eks'))).toBeUndefined();
    });

    it('keeps strings YAML 1.1 would misread as strings for kubectl', async () => {
      const prepared = await auth().prepare(target('gke'), kubeconfig(GKE_EXEC));

      expect(readBack(prepared).contexts[0].context.namespace).toBe('on');
      expect(readBack(prepared).preferences.colors).toBe(true);
    });
  });

  describe('on-prem providers', () => {
    it.each(['kubeconfig', 'k3s', 'other'] as const)(
      'returns a %s kubeconfig unchanged, exec block and all',
      async (provider) => {
        const stored = kubeconfig(EKS_EXEC);
        const awsCredentials = vi.fn();

        const prepared = await auth({ awsCredentials }).prepare(target(provider), stored);

        expect(prepared).toBe(stored);
        expect(awsCredentials).not.toHaveBeenCalled();
      },
    );

    it('still refuses an invalid one', async () => {
      const error = await rejection(auth().prepare(target('k3s'), 'clusters: []\n'));

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toBe(
        'The stored kubeconfig of k3s cluster "prod-cluster" (target tgt-7) has no clusters',
      );
    });
  });

  describe('invalid kubeconfigs', () => {
    const good = kubeconfig(`client-key-data: ${CLIENT_KEY_CANARY}\n${AKS_EXEC}`);
    it.each([
      [
        'invalid YAML',
        `users:\n- name: x\n  user: {client-key-data: ${CLIENT_KEY_CANARY}: : }\n`,
        /is not valid YAML \(line 3, column \d+\)$/,
      ],
      [
        'a list at the top',
        `- client-key-data: ${CLIENT_KEY_CANARY}\n`,
        /is not a kubeconfig: its top level is not a mapping$/,
      ],
      [
        'no clusters',
        good.replace(/clusters:[\s\S]*?contexts:/, 'clusters: []\ncontexts:'),
        /has no clusters$/,
      ],
      [
        'a cluster without a server',
        good.replace('server: https://prod.example.test:443', 'proxy-url: x'),
        /has a cluster without a server \(clusters\[0\]\)$/,
      ],
      ['no current-context', good.replace('current-context: prod', ''), /names no current-context$/],
      [
        'an unknown current-context',
        good.replace('current-context: prod', `current-context: ${CLIENT_KEY_CANARY}`),
        /has a current-context that is not one of its 1 context\(s\)$/,
      ],
      [
        'an unknown user',
        good.replace('user: prod-user', `user: ${CLIENT_KEY_CANARY}`),
        /has a current context whose user is not defined in it$/,
      ],
      [
        'an unknown cluster',
        good.replace('cluster: prod\n', 'cluster: elsewhere\n'),
        /has a current context whose cluster is not defined in it$/,
      ],
      [
        'no user in the current context',
        good.replace('    user: prod-user\n', ''),
        /has a current context that names no user to carry a token$/,
      ],
      [
        'an alias bomb',
        `a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n`,
        /too many or unresolved aliases$/,
      ],
    ])('refuses %s, naming the target and never quoting the file', async (_case, text, problem) => {
      const { credential, calls } = fixedCredential();

      const error = await rejection(auth({ azureCredential: credential }).prepare(target('aks'), text));

      expect(error).toBeInstanceOf(LaunchRejectedError);
      expect(error.message).toMatch(/^The stored kubeconfig of AKS cluster "prod-cluster" \(target tgt-7\) /);
      expect(error.message).toMatch(problem);
      expect(calls).toEqual([]);
      expectNoCanary(error);
    });

    it('accepts the unbroken original of those cases', async () => {
      await expect(auth().prepare(target('aks'), good)).resolves.toContain(
        `client-key-data: ${CLIENT_KEY_CANARY}`,
      );
    });
  });
});
