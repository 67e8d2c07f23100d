import { resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { esbuildOptionsFor } from '../../infra/bundling.ts';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../../infra/handlers.ts';
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
  // Only files that put code in the bundle: a re-export-only module esbuild read (zod's locales/index.js) adds none.
  const inputs = Object.values(meta.outputs).flatMap((o) =>
    Object.entries(o.inputs).flatMap(([path, input]) => (input.bytesInOutput > 0 ? [path] : [])),
  );
  return {
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

  it('RefreshDiscovery, a refresher, holds the EC2 client beside the DynamoDB one it writes the cache with', () => {
    expect(awsClients('RefreshDiscovery')).toEqual(['@aws-sdk/client-dynamodb', '@aws-sdk/client-ec2']);
  });

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

  it('the checks see what they look for: the dispatcher holds the cloud SDKs, and OpenAPI zod', () => {
    expect([...of('DispatchRuns').packages].filter((p) => CLOUD_SDK.test(p)).length).toBeGreaterThan(0);
    expect(of('DispatchRuns').packages.has('yaml')).toBe(true);
    expect(of('GetOpenapi').packages.has('zod')).toBe(true);
    expect(of('GetOpenapi').inputs.some((p) => p.endsWith('zod/v4/locales/en.js'))).toBe(true);
  });
});
