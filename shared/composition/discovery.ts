import type { TokenCredential } from '@azure/identity';
import { DiscoveryCache } from '../app/discovery.ts';
import { DEFAULT_DISCOVERY_REFRESH_SECONDS } from '../config/settings/discovery.ts';
import type { Settings } from '../config/settings.ts';
import type { HostingCloud } from '../domain/target.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { Clock } from '../ports/clock.ts';
import type { DiscoveryStore } from '../ports/discovery-store.ts';
import type { Logger } from '../ports/logger.ts';
import type { VmDiscovery } from '../ports/vm-discovery.ts';

export interface BuiltDiscovery {
  readonly cache: DiscoveryCache;
  /** Stop the scheduled refreshes. */
  readonly stop: () => void;
}

/**
 * The loaders of the clouds' listing SDKs (EC2, Azure Compute and Network,
 * GCE), behind one test of `RW_DISCOVERY_SDKS`: a compile-time `"none"` in
 * every Lambda bundle except the functions that refresh discovery
 * (infra/bundling.ts), where esbuild folds it and drops the loaders and the
 * SDKs with them. Those functions only read the cache.
 */
const discoverySdks =
  process.env.RW_DISCOVERY_SDKS === 'none'
    ? undefined
    : {
        aws: () => import('../adapters/ec2/vm-discovery.ts'),
        azure: () =>
          Promise.all([
            import('@azure/arm-compute'),
            import('@azure/arm-network'),
            import('../adapters/azure-compute/vm-discovery.ts'),
            import('../adapters/cluster-auth/aks-token.ts'),
          ]),
        gcp: () => import('../adapters/gce/vm-discovery.ts'),
      };
type DiscoverySdks = NonNullable<typeof discoverySdks>;

/** A cloud's VmDiscovery, its SDK imported on the first refresh (local mode starts without them). */
function lazy<K extends HostingCloud>(
  sdks: DiscoverySdks,
  cloud: K,
  make: (loaded: Awaited<ReturnType<DiscoverySdks[K]>>) => VmDiscovery,
): VmDiscovery {
  const discovery = onFirstUse(async () =>
    make((await sdks[cloud]()) as Awaited<ReturnType<DiscoverySdks[K]>>),
  );
  return { cloud, discover: async () => (await discovery()).discover() };
}

interface DiscoveryContext {
  readonly settings: Settings;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly logger: Logger;
}

/** A cloud `discovery_clouds` names: its source, once this bundle's SDKs are given, or why its scope is unknown. */
type CloudScope = { readonly unknown: string } | { readonly source: (sdks: DiscoverySdks) => VmDiscovery };

const notSet = (setting: string): CloudScope => ({ unknown: `${setting} is not set` });

/**
 * EC2 lists `discovery_aws_regions`, else the environment's region; GCE lists
 * `gcp_project_id`, in `discovery_gcp_zones` or every zone; Azure lists
 * `azure_subscription_id`, kept to `discovery_azure_resource_groups` if set.
 */
function scopeOf(cloud: HostingCloud, { settings, env }: DiscoveryContext): CloudScope {
  switch (cloud) {
    case 'aws': {
      const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
      const regions = settings.discovery_aws_regions ?? (region === undefined ? [] : [region]);
      if (regions.length === 0) return { unknown: 'no region is known; set discovery_aws_regions' };
      return { source: (sdks) => lazy(sdks, 'aws', (m) => new m.Ec2VmDiscovery({ regions })) };
    }
    case 'azure': {
      const subscription = settings.azure_subscription_id;
      if (subscription === undefined) return notSet('azure_subscription_id');
      const groups = settings.discovery_azure_resource_groups;
      return {
        source: (sdks) => lazy(sdks, 'azure', (loaded) => azureDiscovery(loaded, subscription, groups)),
      };
    }
    case 'gcp': {
      const project = settings.gcp_project_id;
      if (project === undefined) return notSet('gcp_project_id');
      const zones = settings.discovery_gcp_zones;
      return {
        source: (sdks) =>
          lazy(
            sdks,
            'gcp',
            (m) => new m.GceVmDiscovery({ project, ...(zones === undefined ? {} : { zones }) }),
          ),
      };
    }
  }
}

function azureDiscovery(
  [
    { ComputeManagementClient },
    { NetworkManagementClient },
    { AzureVmDiscovery },
    { defaultAzureCredential },
  ]: Awaited<ReturnType<DiscoverySdks['azure']>>,
  subscription: string,
  groups: readonly string[] | undefined,
): VmDiscovery {
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
}

/**
 * Each cloud `discovery_clouds` names whose scope is known (scopeOf), with its
 * source when this bundle carries the SDKs. Credentials come from each cloud's
 * usual environment.
 */
function discoveryClouds(context: DiscoveryContext): {
  readonly clouds: readonly HostingCloud[];
  readonly sources: readonly VmDiscovery[];
} {
  const clouds: HostingCloud[] = [];
  const sources: VmDiscovery[] = [];
  const sdks: DiscoverySdks | undefined = discoverySdks;
  for (const cloud of new Set(context.settings.discovery_clouds ?? [])) {
    const scope = scopeOf(cloud, context);
    if ('unknown' in scope) {
      context.logger.warn(`discovery: ${cloud} is listed but ${scope.unknown}`);
      continue;
    }
    clouds.push(cloud);
    if (sdks !== undefined) sources.push(scope.source(sdks));
  }
  return { clouds, sources };
}

/**
 * Local mode's discovery cache for the clouds `discovery_clouds` names, in
 * memory, refreshing at start and every `discovery_refresh_seconds`;
 * undefined when no cloud is named.
 */
export function buildDiscovery(
  options: DiscoveryContext & { readonly clock: Clock },
): BuiltDiscovery | undefined {
  const { sources } = discoveryClouds(options);
  if (sources.length === 0) return undefined;
  const cache = new DiscoveryCache(sources, options.clock, options.logger);
  const stop = cache.schedule(
    options.settings.discovery_refresh_seconds ?? DEFAULT_DISCOVERY_REFRESH_SECONDS,
  );
  return { cache, stop };
}

/**
 * The deployed stack's discovery cache: each cloud's list in the runs table
 * (`store`), read by every function, refreshed (POST /discovery/refresh, the
 * scheduled function) only where the listing SDKs are bundled. No timer: the
 * schedule is an EventBridge rule (infra/constructs/discovery-schedule.ts).
 * Undefined when no cloud is named.
 */
export function buildStoredDiscovery(
  options: DiscoveryContext & { readonly clock: Clock; readonly store: DiscoveryStore },
): DiscoveryCache | undefined {
  const { clouds, sources } = discoveryClouds(options);
  if (clouds.length === 0) return undefined;
  return new DiscoveryCache(sources, options.clock, options.logger, {
    store: options.store,
    clouds,
    // Submit and dispatch of a batch look up to 50 VMs up in one invocation: one read of each cloud's item.
    lookupCacheSeconds: 5,
  });
}
