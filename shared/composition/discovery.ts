import type { Logger } from '@aws-lambda-powertools/logger';
import { Ec2VmDiscovery } from '../adapters/ec2/vm-discovery.ts';
import { GceVmDiscovery } from '../adapters/gce/vm-discovery.ts';
import { DiscoveryCache } from '../app/discovery.ts';
import { DEFAULT_DISCOVERY_REFRESH_SECONDS } from '../config/discovery-settings.ts';
import type { Settings } from '../config/settings.ts';
import type { Clock } from '../ports/clock.ts';
import type { VmDiscovery } from '../ports/vm-discovery.ts';

export interface BuiltDiscovery {
  readonly cache: DiscoveryCache;
  /** Stop the scheduled refreshes. */
  readonly stop: () => void;
}

/**
 * The discovery cache for the clouds `discovery_clouds` names, refreshing on
 * `discovery_refresh_seconds`; undefined when no cloud is named. EC2 lists
 * `discovery_aws_regions`, else the environment's region; GCE lists
 * `gcp_project_id`, in `discovery_gcp_zones` or every zone.
 */
export function buildDiscovery(options: {
  readonly settings: Settings;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly clock: Clock;
  readonly logger: Logger;
}): BuiltDiscovery | undefined {
  const { settings, env } = options;
  const sources: VmDiscovery[] = [];
  for (const cloud of new Set(settings.discovery_clouds ?? [])) {
    if (cloud === 'aws') {
      const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
      const regions = settings.discovery_aws_regions ?? (region === undefined ? [] : [region]);
      if (regions.length === 0) {
        options.logger.warn('discovery: aws is listed but no region is known; set discovery_aws_regions');
        continue;
      }
      sources.push(new Ec2VmDiscovery({ regions }));
    }
    if (cloud === 'gcp') {
      if (settings.gcp_project_id === undefined) {
        options.logger.warn('discovery: gcp is listed but gcp_project_id is not set');
        continue;
      }
      sources.push(
        new GceVmDiscovery({
          project: settings.gcp_project_id,
          ...(settings.discovery_gcp_zones === undefined ? {} : { zones: settings.discovery_gcp_zones }),
        }),
      );
    }
  }
  if (sources.length === 0) return undefined;
  const cache = new DiscoveryCache(sources, options.clock, options.logger);
  const stop = cache.schedule(settings.discovery_refresh_seconds ?? DEFAULT_DISCOVERY_REFRESH_SECONDS);
  return { cache, stop };
}
