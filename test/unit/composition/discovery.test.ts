import { describe, expect, it } from 'vitest';
import { buildStoredDiscovery } from '../../../shared/composition/discovery.ts';
import { loadSettings } from '../../../shared/config/load-settings.ts';
import { MemoryDiscoveryStore } from '../../../shared/ports/discovery-store.ts';
import type { Logger } from '../../../shared/ports/logger.ts';

/*
 * Which clouds `discovery_clouds` gets a listing for: a cloud whose scope is
 * unknown is left out with a warning naming what to set, and the rest are
 * listed. No SDK is loaded here: a cloud's SDK is imported on its first refresh,
 * and the stored variant (the deployed stack's) never refreshes by itself.
 */

function warnings() {
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (message) => {
      lines.push(message);
    },
    error: () => {},
  };
  return { lines, logger };
}

const clock = { now: () => '2026-12-02T00:00:00.000Z', nowMs: () => 0 } as never;

function build(env: Record<string, string>, processEnv: Record<string, string> = {}) {
  const { lines, logger } = warnings();
  const settings = loadSettings({ env });
  const built = buildStoredDiscovery({
    settings,
    env: processEnv,
    logger,
    clock,
    store: new MemoryDiscoveryStore(),
  });
  return { built, lines };
}

describe('discovery clouds', () => {
  it('leaves out each named cloud whose scope is unknown, saying what to set', () => {
    const { built, lines } = build({ DISCOVERY_CLOUDS: 'aws,azure,gcp' });
    expect(built).toBeUndefined();
    expect(lines).toEqual([
      'discovery: aws is listed but no region is known; set discovery_aws_regions',
      'discovery: azure is listed but azure_subscription_id is not set',
      'discovery: gcp is listed but gcp_project_id is not set',
    ]);
  });

  it.each([
    ['aws, by the environment’s region', { DISCOVERY_CLOUDS: 'aws' }, { AWS_REGION: 'eu-west-1' }],
    ['aws, by discovery_aws_regions', { DISCOVERY_CLOUDS: 'aws', DISCOVERY_AWS_REGIONS: 'eu-west-1' }, {}],
    [
      'azure',
      { DISCOVERY_CLOUDS: 'azure', AZURE_SUBSCRIPTION_ID: '00000000-0000-0000-0000-000000000000' },
      {},
    ],
    ['gcp', { DISCOVERY_CLOUDS: 'gcp', GCP_PROJECT_ID: 'my-project' }, {}],
  ])('lists %s without a warning', (_, env, processEnv: Record<string, string>) => {
    const { built, lines } = build(env, processEnv);
    expect(built).toBeDefined();
    expect(lines).toEqual([]);
  });
});
