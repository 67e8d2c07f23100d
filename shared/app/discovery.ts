import {
  type DiscoveredRow,
  discoveredInventory,
  discoveredRow,
  discoveredTarget,
} from '../domain/discovery.ts';
import type { InventoryGroups } from '../domain/inventory-groups.ts';
import type { HostingCloud, VmTarget } from '../domain/target.ts';
import type { Clock } from '../ports/clock.ts';
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

interface CloudEntry {
  rows: readonly DiscoveredRow[];
  refreshedAt?: string;
  error?: string;
}

/**
 * The cached list of discovered cloud VMs: refreshed on demand (`POST
 * /discovery/refresh`) and on a schedule, read by `GET /inventory` and by
 * target lookup, so a discovered VM is targetable like a registered one.
 * A cloud whose refresh fails keeps its previous list and says why;
 * concurrent refreshes share one round of calls. In memory, per process, as
 * the seeds' cloud-tab caches are.
 *
 * @example
 * const cache = new DiscoveryCache([new Ec2VmDiscovery({ regions: ['us-east-1'] })], clock, logger);
 * await cache.refresh();
 * cache.target('aws-i-0123456789abcdef0'); // a VmTarget, or undefined
 */
export class DiscoveryCache {
  readonly #entries = new Map<HostingCloud, CloudEntry>();
  #inFlight: Promise<DiscoverySnapshot> | undefined;

  constructor(
    private readonly sources: readonly VmDiscovery[],
    private readonly clock: Clock,
    private readonly logger?: Logger,
  ) {
    for (const source of sources) this.#entries.set(source.cloud, { rows: [] });
  }

  /** Ask every cloud again; answers the new snapshot. */
  refresh(): Promise<DiscoverySnapshot> {
    this.#inFlight ??= this.#refreshAll().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #refreshAll(): Promise<DiscoverySnapshot> {
    await Promise.all(
      this.sources.map(async (source) => {
        const entry = this.#entries.get(source.cloud) ?? { rows: [] };
        try {
          const vms = await source.discover();
          this.#entries.set(source.cloud, { rows: vms.map(discoveredRow), refreshedAt: this.clock.now() });
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          this.logger?.warn('discovery: a cloud could not be listed; its previous list is kept', {
            cloud: source.cloud,
            error: message,
          });
          this.#entries.set(source.cloud, { ...entry, error: message.slice(0, 500) });
        }
      }),
    );
    return this.snapshot();
  }

  snapshot(): DiscoverySnapshot {
    const clouds: Partial<Record<HostingCloud, CloudDiscovery>> = {};
    const vms: DiscoveredRow[] = [];
    for (const [cloud, entry] of this.#entries) {
      clouds[cloud] = {
        count: entry.rows.length,
        ...(entry.refreshedAt === undefined ? {} : { refreshedAt: entry.refreshedAt }),
        ...(entry.error === undefined ? {} : { error: entry.error }),
      };
      vms.push(...entry.rows);
    }
    vms.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return { clouds, vms };
  }

  /** The discovered VM with this id as a target (untargetable ones keep their reason), or undefined. */
  target(id: string): VmTarget | undefined {
    for (const entry of this.#entries.values()) {
      const row = entry.rows.find((r) => r.id === id);
      if (row !== undefined) return discoveredTarget(row, entry.refreshedAt ?? this.clock.now());
    }
    return undefined;
  }

  /** One inventory group per cloud (`discovered_<cloud>`), targetable VMs only. */
  inventory(): InventoryGroups {
    const hostvars: Record<string, Readonly<Record<string, unknown>>> = {};
    const groups: Record<string, readonly string[]> = {};
    for (const entry of this.#entries.values()) {
      const part = discoveredInventory(entry.rows, entry.refreshedAt ?? this.clock.now());
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
