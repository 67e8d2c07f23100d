import {
  type DiscoveredRow,
  discoveredInventory,
  discoveredRow,
  discoveredTarget,
} from '../domain/discovery.ts';
import type { InventoryGroups } from '../domain/inventory-groups.ts';
import { HOSTING_CLOUDS, type HostingCloud, type VmTarget } from '../domain/target.ts';
import type { Clock } from '../ports/clock.ts';
import { type CloudListing, type DiscoveryStore, MemoryDiscoveryStore } from '../ports/discovery-store.ts';
import type { Logger } from '../ports/logger.ts';
import type { VmDiscovery } from '../ports/vm-discovery.ts';

/** One cloud's part of the cached list. */
export interface CloudDiscovery {
  readonly count: number;
  /** When its list was last read successfully; absent before the first success. */
  readonly refreshedAt?: string;
  /** Why the last refresh failed; the previous list is kept meanwhile. */
  readonly error?: string;
}

export interface DiscoverySnapshot {
  readonly clouds: Readonly<Partial<Record<HostingCloud, CloudDiscovery>>>;
  /** Every VM, targetable or not (with its reason), sorted by id. */
  readonly vms: readonly DiscoveredRow[];
}

/**
 * How long one cloud may take to list its VMs before the refresh records
 * that as its error (keeping its previous list): a refresh behind API
 * Gateway must answer within its 30 s, so 20 s leaves room for the writes.
 */
export const CLOUD_LISTING_TIMEOUT_SECONDS = 20;

export interface DiscoveryCacheOptions {
  /** Where each cloud's listing is kept; default in this process's memory (local mode). */
  readonly store?: DiscoveryStore;
  /**
   * Clouds read from the store without a source here: a function that only
   * reads the cache (GET /discovery, submit, dispatch) lists the clouds a
   * refreshing function writes.
   */
  readonly clouds?: readonly HostingCloud[];
  /** Per cloud, default CLOUD_LISTING_TIMEOUT_SECONDS. */
  readonly timeoutSeconds?: number;
  /**
   * How long `target` may reuse a cloud's listing it read (default 0: read
   * every time). The deployed stack sets a few seconds: a batch of 50
   * discovered VMs is then one read of the cloud's item, not 50.
   */
  readonly lookupCacheSeconds?: number;
}

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** `aws-i-0abc…` → `aws`: a discovered VM's id starts with its cloud (domain discoveredId). */
const cloudOfId = (id: string): HostingCloud | undefined =>
  HOSTING_CLOUDS.find((cloud) => id.startsWith(`${cloud}-`));

/**
 * The cached list of discovered cloud VMs: refreshed on demand (`POST
 * /discovery/refresh`) and on a schedule, read by `GET /inventory` and by
 * target lookup, so a discovered VM is targetable like a registered one.
 * A cloud whose refresh fails (or exceeds its time) keeps its previous list
 * and says why; concurrent refreshes in one process share one round of
 * calls. The lists live in a DiscoveryStore: memory in local mode, the runs
 * table in the deployed stack.
 *
 * @example
 * const cache = new DiscoveryCache([new Ec2VmDiscovery({ regions: ['us-east-1'] })], clock, logger);
 * await cache.refresh();
 * await cache.target('aws-i-0123456789abcdef0'); // a VmTarget, or undefined
 */
export class DiscoveryCache {
  readonly #store: DiscoveryStore;
  readonly #clouds: readonly HostingCloud[];
  readonly #timeoutMs: number;
  readonly #lookupCacheMs: number;
  readonly #lookups = new Map<
    HostingCloud,
    { readonly until: number; readonly listing: Promise<CloudListing | undefined> }
  >();
  #inFlight: Promise<DiscoverySnapshot> | undefined;

  constructor(
    private readonly sources: readonly VmDiscovery[],
    private readonly clock: Clock,
    private readonly logger?: Logger,
    options: DiscoveryCacheOptions = {},
  ) {
    this.#store = options.store ?? new MemoryDiscoveryStore();
    this.#clouds = [...new Set([...sources.map((s) => s.cloud), ...(options.clouds ?? [])])];
    this.#timeoutMs = (options.timeoutSeconds ?? CLOUD_LISTING_TIMEOUT_SECONDS) * 1000;
    this.#lookupCacheMs = (options.lookupCacheSeconds ?? 0) * 1000;
  }

  /** Ask every cloud again; answers the new snapshot. */
  refresh(): Promise<DiscoverySnapshot> {
    this.#inFlight ??= this.#refreshAll().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #refreshAll(): Promise<DiscoverySnapshot> {
    await Promise.all(this.sources.map((source) => this.#refreshOne(source)));
    return this.snapshot();
  }

  async #refreshOne(source: VmDiscovery): Promise<void> {
    try {
      const vms = await this.#bounded(source);
      await this.#store.saveListing(source.cloud, vms.map(discoveredRow), this.clock.now());
    } catch (error) {
      const message = messageOf(error).slice(0, 500);
      this.logger?.warn('discovery: a cloud could not be listed; its previous list is kept', {
        cloud: source.cloud,
        error: message,
      });
      await this.#store.saveFailure(source.cloud, message, this.clock.now());
    } finally {
      this.#lookups.delete(source.cloud);
    }
  }

  /** The source's list, or a rejection once it has taken longer than the timeout. */
  async #bounded(source: VmDiscovery): ReturnType<VmDiscovery['discover']> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${source.cloud} did not answer within ${this.#timeoutMs / 1000} s`)),
        this.#timeoutMs,
      );
    });
    try {
      return await Promise.race([source.discover(), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #listings(): Promise<readonly (readonly [HostingCloud, CloudListing])[]> {
    return Promise.all(
      this.#clouds.map(async (cloud) => [cloud, (await this.#store.get(cloud)) ?? { rows: [] }] as const),
    );
  }

  async snapshot(): Promise<DiscoverySnapshot> {
    const clouds: Partial<Record<HostingCloud, CloudDiscovery>> = {};
    const vms: DiscoveredRow[] = [];
    for (const [cloud, listing] of await this.#listings()) {
      clouds[cloud] = {
        count: listing.rows.length,
        ...(listing.refreshedAt === undefined ? {} : { refreshedAt: listing.refreshedAt }),
        ...(listing.error === undefined ? {} : { error: listing.error }),
      };
      vms.push(...listing.rows);
    }
    vms.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { clouds, vms };
  }

  /** The discovered VM with this id as a target (untargetable ones keep their reason), or undefined. */
  async target(id: string): Promise<VmTarget | undefined> {
    const cloud = cloudOfId(id);
    if (cloud === undefined || !this.#clouds.includes(cloud)) return undefined;
    const listing = await this.#lookup(cloud);
    const row = listing?.rows.find((r) => r.id === id);
    return row === undefined ? undefined : discoveredTarget(row, listing?.refreshedAt ?? this.clock.now());
  }

  /** The cloud's listing for `target`, reused for `lookupCacheSeconds`; a failed read is not kept. */
  #lookup(cloud: HostingCloud): Promise<CloudListing | undefined> {
    const now = this.clock.nowMs();
    const kept = this.#lookups.get(cloud);
    if (kept !== undefined && kept.until > now) return kept.listing;
    const listing = this.#store.get(cloud);
    if (this.#lookupCacheMs > 0) {
      this.#lookups.set(cloud, { until: now + this.#lookupCacheMs, listing });
      listing.catch(() => this.#lookups.delete(cloud));
    }
    return listing;
  }

  /** One inventory group per cloud (`discovered_<cloud>`), targetable VMs only. */
  async inventory(): Promise<InventoryGroups> {
    const hostvars: Record<string, Readonly<Record<string, unknown>>> = {};
    const groups: Record<string, readonly string[]> = {};
    for (const [, listing] of await this.#listings()) {
      const part = discoveredInventory(listing.rows, listing.refreshedAt ?? this.clock.now());
      Object.assign(hostvars, part.hostvars);
      Object.assign(groups, part.groups);
    }
    return { hostvars, groups };
  }

  /**
   * Refresh now and then every `intervalSeconds` (0: never on a timer). The
   * timer does not keep the process alive; the returned function stops it.
   */
  schedule(intervalSeconds: number): () => void {
    const run = () => {
      this.refresh().catch(() => {});
    };
    run();
    if (intervalSeconds <= 0) return () => {};
    const timer = setInterval(run, intervalSeconds * 1000);
    timer.unref();
    return () => clearInterval(timer);
  }
}
