import type { TokenCredential } from '@azure/identity';
import { DiscoveryCache } from '../app/discovery.ts';
import { DEFAULT_DISCOVERY_REFRESH_SECONDS } from '../config/settings/discovery.ts';
import type { Settings } from '../config/settings.ts';
import type { HostingCloud } from '../domain/target.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { VmDiscovery } from '../ports/vm-discovery.ts';

export interface BuiltDiscovery {
  readonly cache: DiscoveryCache;
  /** Stop the scheduled refreshes. */
  readonly stop: () => void;
}

/**
 * A cloud's VmDiscovery, its SDK imported on the first refresh: local mode
 * starts without loading the Azure and Google clients it may never use.
 */
function lazy(cloud: HostingCloud, make: () => Promise<VmDiscovery>): VmDiscovery {
  const discovery = onFirstUse(make);
  return { cloud, discover: async () => (await discovery()).discover() };
}

/**
 * The discovery cache for the clouds `discovery_clouds` names, refreshing on
 * `discovery_refresh_seconds`; undefined when no cloud is named. EC2 lists
 * `discovery_aws_regions`, else the environment's region; GCE lists
 * `gcp_project_id`, in `discovery_gcp_zones` or every zone; Azure lists
 * `azure_subscription_id`, kept to `discovery_azure_resource_groups` if set.
 * Credentials come from each cloud's usual environment.
 */
export function buildDiscovery(options: {
  readonly settings: Settings;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly clock: Clock;
  readonly logger: Logger;
}): BuiltDiscovery | undefined {
  const { settings, env, logger } = options;
  const sources: VmDiscovery[] = [];
  for (const cloud of new Set(settings.discovery_clouds ?? [])) {
    if (cloud === 'aws') {
      const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
      const regions = settings.discovery_aws_regions ?? (region === undefined ? [] : [region]);
      if (regions.length === 0) {
        logger.warn('discovery: aws is listed but no region is known; set discovery_aws_regions');
        continue;
      }
      sources.push(
        lazy('aws', async () => {
          const { Ec2VmDiscovery } = await import('../adapters/ec2/vm-discovery.ts');
          return new Ec2VmDiscovery({ regions });
        }),
      );
    }
    if (cloud === 'azure') {
      const subscription = settings.azure_subscription_id;
      if (subscription === undefined) {
        logger.warn('discovery: azure is listed but azure_subscription_id is not set');
        continue;
      }
      const groups = settings.discovery_azure_resource_groups;
      sources.push(
        lazy('azure', async () => {
          const [
            { ComputeManagementClient },
            { NetworkManagementClient },
            { AzureVmDiscovery },
            { defaultAzureCredential },
          ] = await Promise.all([
            import('@azure/arm-compute'),
            import('@azure/arm-network'),
            import('../adapters/azure-compute/vm-discovery.ts'),
            import('../adapters/cluster-auth/aks-token.ts'),
          ]);
          // Service principal, workload identity or managed identity from AZURE_* variables.
          const credential: TokenCredential = {
            getToken: async (scopes, getTokenOptions) =>
              (await defaultAzureCredential()).getToken(scopes, getTokenOptions),
          };
          return new AzureVmDiscovery({
            compute: new ComputeManagementClient(credential, subscription),
            network: new NetworkManagementClient(credential, subscription),
            ...(groups === undefined ? {} : { resourceGroups: groups }),
          });
        }),
      );
    }
    if (cloud === 'gcp') {
      const project = settings.gcp_project_id;
      if (project === undefined) {
        logger.warn('discovery: gcp is listed but gcp_project_id is not set');
        continue;
      }
      const zones = settings.discovery_gcp_zones;
      sources.push(
        lazy('gcp', async () => {
          const { GceVmDiscovery } = await import('../adapters/gce/vm-discovery.ts');
          return new GceVmDiscovery({ project, ...(zones === undefined ? {} : { zones }) });
        }),
      );
    }
  }
  if (sources.length === 0) return undefined;
  const cache = new DiscoveryCache(sources, options.clock, logger);
  const stop = cache.schedule(settings.discovery_refresh_seconds ?? DEFAULT_DISCOVERY_REFRESH_SECONDS);
  return { cache, stop };
}
