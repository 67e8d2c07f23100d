import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { esbuildOptionsFor } from '../../infra/bundling.ts';
import { API_HANDLERS, type HandlerSpec, WORKER_HANDLERS } from '../../infra/handlers.ts';
import { REPO } from './synth.ts';

const entries = [
  ...new Set([...Object.values(API_HANDLERS), ...Object.values(WORKER_HANDLERS)].map((s) => s.entry)),
];

describe('infra/handlers.ts', () => {
  // The stack deploys each entry with handler `index.handler`; a module without that export deploys a function that can never run.
  it.each(entries)('%s exports the Lambda handler', async (entry) => {
    const module = (await import(pathToFileURL(resolve(REPO, entry)).href)) as { handler?: unknown };

    expect(typeof module.handler).toBe('function');
  });
});

describe('cloud SDKs in the bundles', () => {
  /** The packages a bundle holds, from esbuild's metafile. */
  const packagesIn = async (spec: HandlerSpec): Promise<Set<string>> => {
    const result = await build({
      ...esbuildOptionsFor(resolve(REPO, spec.entry), '/dev/null', spec),
      absWorkingDir: REPO,
      write: false,
      metafile: true,
    });
    const inputs = Object.values(result.metafile.outputs).flatMap((o) => Object.keys(o.inputs));
    return new Set(inputs.flatMap((path) => /node_modules\/((@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? []));
  };
  const CLOUD_SDKS = [
    '@google-cloud/run',
    '@azure/arm-containerinstance',
    '@kubernetes/client-node',
    '@azure/identity',
  ];

  it('are left out of a function that never touches a task, and kept where tasks are launched', async () => {
    const healthz = await packagesIn(API_HANDLERS['GET /healthz']);
    const dispatcher = await packagesIn(WORKER_HANDLERS.DispatchRuns);

    for (const sdk of CLOUD_SDKS) {
      expect(healthz.has(sdk), sdk).toBe(false);
      expect(dispatcher.has(sdk), sdk).toBe(true);
    }
    // Healthz now holds no AWS SDK client at all (test/infra/bundle-contents.test.ts); the dispatcher does.
    expect(dispatcher.has('@aws-sdk/client-dynamodb')).toBe(true);
  }, 60_000);

  // The VM-listing SDKs (shared/composition/discovery.ts) are gated the same way, by discoversVms.
  const LISTING_SDKS = [
    '@aws-sdk/client-ec2',
    '@azure/arm-compute',
    '@azure/arm-network',
    '@google-cloud/compute',
  ];

  it('of VM listing are only in the functions that refresh discovery; GET /discovery and the dispatcher are built without them', async () => {
    // The scheduled function has the same flags as the API's refresh (pinned below), so one build speaks for both.
    const [refresh, reader, dispatcher] = await Promise.all(
      [
        API_HANDLERS['POST /discovery/refresh'],
        API_HANDLERS['GET /discovery'],
        WORKER_HANDLERS.DispatchRuns,
      ].map(packagesIn),
    );

    for (const sdk of LISTING_SDKS) {
      expect(refresh?.has(sdk), sdk).toBe(true);
      expect(reader?.has(sdk), sdk).toBe(false);
      expect(dispatcher?.has(sdk), sdk).toBe(false);
    }
    expect(
      Object.entries({ ...API_HANDLERS, ...WORKER_HANDLERS })
        .filter(([, spec]) => (spec as HandlerSpec).discoversVms === true)
        .map(([name]) => name)
        .sort(),
    ).toEqual(['POST /discovery/refresh', 'RefreshDiscoverySchedule']);
  }, 120_000);

  it('are kept by every function that starts, stops, polls or reads a task', () => {
    const controlling = Object.entries({ ...API_HANDLERS, ...WORKER_HANDLERS })
      .filter(([, spec]) => (spec as HandlerSpec).controlsTasks === true)
      .map(([name]) => name)
      .sort();
    expect(controlling).toEqual(
      [
        'DispatchRuns',
        'GET /runs/{id}/logs',
        'POST /runs/{id}/cancel',
        'PollBackends',
        'ReconcileRuns',
      ].sort(),
    );
  });
});
