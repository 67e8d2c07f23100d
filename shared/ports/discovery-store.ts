import type { DiscoveredRow } from '../domain/discovery.ts';
import type { HostingCloud } from '../domain/target.ts';

/** One cloud's part of the discovery cache, as last saved. */
export interface CloudListing {
  /** The VMs of the last successful listing, targetable or not (with their reason). */
  readonly rows: readonly DiscoveredRow[];
  /** When that listing was read; absent before the first success. */
  readonly refreshedAt?: string;
  /** Why the last refresh failed; `rows` are the previous list meanwhile. */
  readonly error?: string;
}

/**
 * Where the discovery cache keeps each cloud's listing between refreshes: in
 * memory for local mode (one process serves every request), in the runs
 * table for the deployed stack (every Lambda reads what the last refresh, on
 * demand or scheduled, wrote).
 *
 * @example
 * await store.saveListing('aws', rows, clock.now());
 * const aws = await store.get('aws'); // { rows, refreshedAt }
 * await store.saveFailure('aws', 'EC2 DescribeInstances in eu-west-1 failed: …', clock.now());
 */
export interface DiscoveryStore {
  get(cloud: HostingCloud): Promise<CloudListing | undefined>;
  /**
   * A successful listing: replaces the cloud's rows and clears its error. A
   * listing read before the one already saved changes nothing (two
   * refreshes racing keep the newer list). Throws when the listing cannot be
   * kept (too large): the caller records that as the cloud's failure.
   */
  saveListing(cloud: HostingCloud, rows: readonly DiscoveredRow[], refreshedAt: string): Promise<void>;
  /** A failed refresh: keeps the rows and their time, records why (unless a newer success is saved). */
  saveFailure(cloud: HostingCloud, error: string, at: string): Promise<void>;
}

/**
 * DiscoveryStore in the process's memory: local mode's cache, one process
 * answering every request, as the seeds' cloud-tab caches are. Nothing
 * survives a restart: the refresh at start lists every cloud again. The
 * default store of DiscoveryCache, so it lives beside the port (as
 * `systemClock` does) rather than in an adapter the use cases may not import.
 *
 * @example
 * const cache = new DiscoveryCache(sources, clock, logger, { store: new MemoryDiscoveryStore() });
 */
export class MemoryDiscoveryStore implements DiscoveryStore {
  readonly #listings = new Map<HostingCloud, CloudListing>();

  async get(cloud: HostingCloud): Promise<CloudListing | undefined> {
    return this.#listings.get(cloud);
  }

  async saveListing(cloud: HostingCloud, rows: readonly DiscoveredRow[], refreshedAt: string): Promise<void> {
    const saved = this.#listings.get(cloud)?.refreshedAt;
    if (saved !== undefined && saved > refreshedAt) return;
    this.#listings.set(cloud, { rows, refreshedAt });
  }

  async saveFailure(cloud: HostingCloud, error: string, at: string): Promise<void> {
    const saved = this.#listings.get(cloud) ?? { rows: [] };
    if (saved.refreshedAt !== undefined && saved.refreshedAt > at) return;
    this.#listings.set(cloud, { ...saved, error });
  }
}
