import { resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { esbuildOptionsFor } from '../../infra/bundling.ts';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../../infra/handlers.ts';
import { firstCallOutputs } from '../../infra/lambda-bundle.ts';
import { REPO } from './synth.ts';

/*
 * What each Lambda bundle holds, read from esbuild's metafile for the bundles
 * the stack deploys (infra/bundling.ts): each function carries only what its
 * handler needs (shared/composition/lambda/). No timing here: the cold-start
 * figures are in bench/lambda-bundles.ts.
 */

const SPECS: Record<string, HandlerSpec> = Object.fromEntries(
  [...Object.values(API_HANDLERS), ...Object.values(WORKER_HANDLERS)].map((s) => [constructIdOf(s.entry), s]),
);

interface Contents {
  /** Every input file that puts code in the bundle. */
  readonly inputs: readonly string[];
  /** The npm packages among them. */
  readonly packages: ReadonlySet<string>;
  /** Our files (outside node_modules) that import a module of `pkg`. */
  readonly importersOf: (pkg: string) => string[];
  /** The output files: `index.mjs` and the chunks beside it. */
  readonly files: readonly string[];
  /**
   * The npm packages Node loads up to the end of the first call: the entry
   * file and what it imports statically, then the function kind's
   * composition chunk (an `import()` of a module under shared/composition/)
   * and its static imports. Every other chunk loads only when its code runs.
   */
  readonly firstCall: ReadonlySet<string>;
  /** Our files (outside node_modules) among what loads up to the end of the first call. */
  readonly firstCallFiles: ReadonlySet<string>;
}

const packageOf = (path: string): string | undefined =>
  /node_modules\/((@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? undefined;

async function contentsOf(spec: HandlerSpec): Promise<Contents> {
  const result = await build({
    ...esbuildOptionsFor(resolve(REPO, spec.entry), '/dev/null', spec),
    absWorkingDir: REPO,
    write: false,
    metafile: true,
  });
  const meta: Metafile = result.metafile;
  const entry = Object.keys(meta.outputs).find((o) => o.endsWith('/null.mjs'));
  if (entry === undefined) throw new Error('no entry file in the metafile');
  const { atLoad, onFirstCall } = firstCallOutputs(meta, entry);
  const firstCall = [...atLoad, ...onFirstCall];
  // Only files that put code in the bundle: a re-export-only module esbuild read (zod's locales/index.js) adds none.
  const inputs = Object.values(meta.outputs).flatMap((o) =>
    Object.entries(o.inputs).flatMap(([path, input]) => (input.bytesInOutput > 0 ? [path] : [])),
  );
  const loadedByFirstCall = firstCall.flatMap((o) =>
    Object.entries(meta.outputs[o]?.inputs ?? {}).flatMap(([path, input]) =>
      input.bytesInOutput > 0 ? [path] : [],
    ),
  );
  return {
    files: Object.keys(meta.outputs),
    firstCall: new Set(loadedByFirstCall.flatMap((path) => packageOf(path) ?? [])),
    firstCallFiles: new Set(loadedByFirstCall.filter((path) => packageOf(path) === undefined)),
    inputs,
    packages: new Set(inputs.flatMap((p) => packageOf(p) ?? [])),
    importersOf: (pkg) =>
      inputs.filter(
        (p) =>
          packageOf(p) === undefined &&
          (meta.inputs[p]?.imports ?? []).some((i) => packageOf(i.path) === pkg),
      ),
  };
}

const contents = new Map<string, Contents>();
beforeAll(async () => {
  for (const [name, spec] of Object.entries(SPECS)) contents.set(name, await contentsOf(spec));
}, 300_000);

const of = (name: string): Contents => {
  const c = contents.get(name);
  if (c === undefined) throw new Error(`no bundle built for ${name}`);
  return c;
};
const awsClients = (name: string): string[] =>
  [...of(name).packages].filter((p) => p.startsWith('@aws-sdk/client-')).sort();
const CLOUD_SDK = /^@(azure|google-cloud|kubernetes)\//;

describe('Lambda bundle contents', () => {
  it('Healthz holds no AWS SDK client, no zod and no YAML parser: a logger and the HTTP layer', () => {
    expect(awsClients('Healthz')).toEqual([]);
    expect(
      [...of('Healthz').packages].filter((p) => p.startsWith('@aws-sdk/') || p.startsWith('@smithy/')),
    ).toEqual([]);
    expect(of('Healthz').packages.has('zod')).toBe(false);
    expect(of('Healthz').packages.has('yaml')).toBe(false);
  });

  it('Healthz and GetOpenapi hold no zod and no Powertools, in one file: nothing loads on the first call', () => {
    for (const name of ['Healthz', 'GetOpenapi']) {
      expect(of(name).packages.has('zod'), name).toBe(false);
      expect(
        [...of(name).packages].filter((p) => p.startsWith('@aws-lambda-powertools/')),
        name,
      ).toEqual([]);
      expect(of(name).files, name).toHaveLength(1);
    }
  });

  it('GetOpenapi serves the prebuilt document: it holds the generated text, not the builder or the schemas', () => {
    expect(of('GetOpenapi').inputs).toContain('shared/http/openapi-document.ts');
    expect(
      of('GetOpenapi').inputs.filter((p) =>
        /shared\/http\/(openapi|route-docs|response-schemas|schemas)\.ts$/.test(p),
      ),
    ).toEqual([]);
  });

  it('no API function loads Powertools: they log through the JSON-line logger', () => {
    for (const key of Object.keys(API_HANDLERS)) {
      const name = constructIdOf(API_HANDLERS[key as keyof typeof API_HANDLERS].entry);
      expect(
        [...of(name).firstCall].filter((p) => p.startsWith('@aws-lambda-powertools/')),
        name,
      ).toEqual([]);
    }
  });

  // zod builds a schema when its module loads: a route that holds another route's schema module builds it.
  it.each([
    'GetRun',
    'ListRuns',
    'GetBatch',
    'GetTarget',
    'ListTargets',
    'DeleteTarget',
    'CancelRun',
    'GetRunLogs',
  ])('%s takes no request body and holds no request-body schema (the submit and upload bodies)', (name) => {
    expect(
      of(name).inputs.filter((p) => /shared\/(app\/requests|http\/request-schemas)\.ts$/.test(p)),
    ).toEqual([]);
  });

  it('only the listing routes hold the listing query schemas', () => {
    const holders = Object.values(API_HANDLERS)
      .map((spec) => constructIdOf(spec.entry))
      .filter((name) => of(name).inputs.includes('shared/http/query-schemas.ts'))
      .sort();
    expect(holders).toEqual(['GetRunLogs', 'ListRuns']);
  });

  it.each([
    'PutTarget',
    'ListTargets',
    'GetTarget',
    'DeleteTarget',
    'GetInventory',
    'ListRuns',
    'GetRun',
    'GetBatch',
    'GetDiscovery',
  ])('%s holds the DynamoDB client and no other', (name) => {
    expect(awsClients(name)).toEqual(['@aws-sdk/client-dynamodb']);
  });

  it.each(['UploadAsset', 'ListAssets'])('%s holds the S3 client and no other', (name) => {
    expect(awsClients(name)).toEqual(['@aws-sdk/client-s3']);
  });

  it('GetOpenapi holds no AWS SDK client', () => {
    expect(awsClients('GetOpenapi')).toEqual([]);
  });

  // Discovery's cache is the runs table's items (table routes); only the refresh lists the clouds (EC2 for AWS).
  it('GetDiscovery holds the DynamoDB client and no other; RefreshDiscovery adds EC2', () => {
    expect(awsClients('GetDiscovery')).toEqual(['@aws-sdk/client-dynamodb']);
    expect(awsClients('RefreshDiscovery')).toEqual(['@aws-sdk/client-dynamodb', '@aws-sdk/client-ec2']);
  });

  // shared/adapters/gce/vm-discovery.ts imports the instances client alone: the package's index loads all its clients.
  it.each(['RefreshDiscovery', 'RefreshDiscoverySchedule'])(
    '%s holds the Compute Engine instances client, not the whole of @google-cloud/compute',
    (name) => {
      const compute = of(name).inputs.filter((p) => p.includes('node_modules/@google-cloud/compute/'));
      expect(compute.some((p) => p.endsWith('/build/src/v1/instances_client.js'))).toBe(true);
      expect(
        compute.filter((p) => /\/(v1beta|v1small)\/|protos\/protos\.js$|src\/index\.js$/.test(p)),
      ).toEqual([]);
      expect(compute.filter((p) => /_client\.js$/.test(p))).toHaveLength(1);
    },
  );

  // The scheduled refresh is a table function too (shared/composition/lambda/tables.ts tableHandler), not the whole AWS composition.
  it('RefreshDiscoverySchedule holds the DynamoDB and EC2 clients and no other; by its first call it loads only DynamoDB', () => {
    expect(awsClients('RefreshDiscoverySchedule')).toEqual([
      '@aws-sdk/client-dynamodb',
      '@aws-sdk/client-ec2',
    ]);
    expect(
      [...of('RefreshDiscoverySchedule').firstCall].filter((p) => p.startsWith('@aws-sdk/client-')),
    ).toEqual(['@aws-sdk/client-dynamodb']);
    expect(of('RefreshDiscoverySchedule').inputs).not.toContain('shared/composition/aws.ts');
  });

  // Partial batch responses are shared/composition/lambda/partial-batch.ts: Powertools batch costs load time for a Promise.allSettled.
  it.each(['DispatchRuns', 'SettleDeadLetters'])(
    '%s holds no Powertools batch processor: it answers partial batches itself',
    (name) => {
      expect([...of(name).packages].filter((p) => p.startsWith('@aws-lambda-powertools/'))).toEqual([]);
      expect(of(name).inputs).toContain('shared/composition/lambda/partial-batch.ts');
    },
  );

  it.each(['SubmitRun', 'SubmitBatch', 'RetryBatch', 'SettleDeadLetters', 'EcsTaskStateChange'])(
    '%s holds no Azure, Google Cloud or Kubernetes SDK',
    (name) => {
      expect([...of(name).packages].filter((p) => CLOUD_SDK.test(p))).toEqual([]);
    },
  );

  it('no bundle holds a zod locale but the default English one', () => {
    for (const [name, c] of contents) {
      // index.js only re-exports the locales (17 bytes of namespace stub); each language is its own file.
      const locales = c.inputs.filter((p) => /zod\/v4\/locales\/(?!en\.js$|index\.js$)/.test(p));
      expect(locales, name).toEqual([]);
    }
  });

  it('no bundle parses YAML settings; YAML reaches only the task functions, through kubeconfig preparation', () => {
    for (const [name, c] of contents) {
      expect(
        c.inputs.filter((p) => p.endsWith('shared/config/settings.ts')),
        name,
      ).toEqual([]);
      const importers = c.importersOf('yaml');
      if (SPECS[name]?.controlsTasks === true) {
        expect(importers, name).toEqual(['shared/adapters/cluster-auth/kubeconfig.ts']);
      } else {
        expect(c.packages.has('yaml'), name).toBe(false);
      }
    }
  });

  const TASK_CONTROLLING = ['DispatchRuns', 'GetRunLogs', 'CancelRun', 'ReconcileRuns', 'PollBackends'];

  it.each(TASK_CONTROLLING)(
    '%s is code-split: the Azure, Google Cloud and Kubernetes SDKs are in chunks loaded only when a backend is used',
    (name) => {
      expect(of(name).files.length).toBeGreaterThan(1);
      expect([...of(name).firstCall].filter((p) => CLOUD_SDK.test(p))).toEqual([]);
      // … and still deployed beside the entry: the chunks hold them.
      expect([...of(name).packages].filter((p) => CLOUD_SDK.test(p)).length).toBeGreaterThan(0);
      expect(of(name).firstCall.has('@aws-sdk/client-dynamodb')).toBe(true);
    },
  );

  /** The functions over the whole AWS composition (shared/composition/aws.ts). */
  const OVER_AWS_COMPOSITION = [
    'DispatchRuns',
    'GetRunLogs',
    'CancelRun',
    'ReconcileRuns',
    'PollBackends',
    'SettleDeadLetters',
    'EcsTaskStateChange',
  ];

  // The whole AWS composition (aws.ts) loads SQS, CloudWatch Logs, ECS and Secrets Manager on first use (lazy-aws.ts).
  it.each(OVER_AWS_COMPOSITION)(
    '%s loads only the DynamoDB client by its first call; the others are chunks of their own',
    (name) => {
      expect([...of(name).firstCall].filter((p) => p.startsWith('@aws-sdk/client-'))).toEqual([
        '@aws-sdk/client-dynamodb',
      ]);
      expect(awsClients(name)).toEqual(
        expect.arrayContaining([
          '@aws-sdk/client-cloudwatch-logs',
          '@aws-sdk/client-ecs',
          '@aws-sdk/client-secrets-manager',
          '@aws-sdk/client-sqs',
        ]),
      );
    },
  );

  // Task preparation and the Password Safe broker load on first use: only the dispatcher prepares tasks.
  it.each(OVER_AWS_COMPOSITION.filter((name) => name !== 'DispatchRuns'))(
    '%s loads neither task preparation nor the Password Safe broker by its first call, though it holds them',
    (name) => {
      const lazy = [
        'shared/app/task-prep.ts',
        'shared/app/connection-material.ts',
        'shared/adapters/password-safe/broker.ts',
      ];
      expect(lazy.filter((file) => of(name).firstCallFiles.has(file))).toEqual([]);
      expect(lazy.filter((file) => of(name).inputs.includes(file))).toEqual(lazy);
      // The check sees our files: the composition itself is loaded.
      expect(of(name).firstCallFiles.has('shared/composition/aws.ts')).toBe(true);
    },
  );

  it.each(['SubmitRun', 'SubmitBatch', 'RetryBatch'])(
    '%s holds no ECS or CloudWatch Logs client; by its first call it loads only DynamoDB, S3 and SQS',
    (name) => {
      expect(awsClients(name)).toEqual([
        '@aws-sdk/client-dynamodb',
        '@aws-sdk/client-s3',
        '@aws-sdk/client-secrets-manager',
        '@aws-sdk/client-sqs',
      ]);
      // Secrets Manager only when a submit keeps plaintext passwords: a chunk of its own.
      expect([...of(name).firstCall].filter((p) => p.startsWith('@aws-sdk/client-')).sort()).toEqual([
        '@aws-sdk/client-dynamodb',
        '@aws-sdk/client-s3',
        '@aws-sdk/client-sqs',
      ]);
    },
  );

  it('the checks see what they look for: the dispatcher holds the cloud SDKs, the reconciler Powertools, GetRun zod', () => {
    expect([...of('DispatchRuns').packages].filter((p) => CLOUD_SDK.test(p)).length).toBeGreaterThan(0);
    expect(of('DispatchRuns').packages.has('yaml')).toBe(true);
    expect(of('ReconcileRuns').packages.has('@aws-lambda-powertools/metrics')).toBe(true);
    expect(of('GetRun').packages.has('zod')).toBe(true);
    expect(of('GetRun').inputs.some((p) => p.endsWith('zod/v4/locales/en.js'))).toBe(true);
    expect(of('SubmitRun').inputs).toContain('shared/app/requests.ts');
  });
});
