import { describe, expect, it } from 'vitest';
import { DiscoveryCache } from '../../../shared/app/discovery.ts';
import { type DiscoveredVm, discoveredId, discoveredRow } from '../../../shared/domain/discovery.ts';
import { untargetableReason } from '../../../shared/domain/target.ts';
import { MemoryDiscoveryStore } from '../../../shared/ports/discovery-store.ts';
import type { VmDiscovery } from '../../../shared/ports/vm-discovery.ts';
import { ManualClock } from './harness.ts';

const vm = (over: Partial<DiscoveredVm> = {}): DiscoveredVm => ({
  id: 'aws-i-1',
  cloud: 'aws',
  name: 'web',
  cloudId: 'i-1',
  state: 'running',
  privateAddress: '10.0.0.1',
  os: 'linux',
  ...over,
});

/** A cloud whose answers the test scripts: a list, or an error. */
class ScriptedCloud implements VmDiscovery {
  readonly cloud = 'aws' as const;
  calls = 0;
  constructor(public answer: readonly DiscoveredVm[] | Error) {}
  async discover() {
    this.calls += 1;
    await new Promise((r) => setTimeout(r, 5));
    if (this.answer instanceof Error) throw this.answer;
    return this.answer;
  }
}

describe('discoveredRow', () => {
  it('keeps why a VM cannot be targeted: not running, or no address', () => {
    expect(discoveredRow(vm()).untargetableReason).toBeUndefined();
    expect(discoveredRow(vm({ state: 'deallocated' })).untargetableReason).toBe(
      'The VM is deallocated, not running: start it in aws and refresh discovery to target it',
    );
    const { privateAddress: _, ...bare } = vm();
    expect(discoveredRow(bare).untargetableReason).toBe('The VM has no IP address to connect to');
  });

  it('makes target ids of the characters a target id allows', () => {
    expect(discoveredId('gcp', 'europe-west1-b', 'web 1/x')).toBe('gcp-europe-west1-b-web-1-x');
  });
});

describe('DiscoveryCache', () => {
  it('serves targets from the last refresh; an untargetable one says why through the target rule', async () => {
    const cloud = new ScriptedCloud([vm(), vm({ id: 'aws-i-2', cloudId: 'i-2', state: 'stopped' })]);
    const cache = new DiscoveryCache([cloud], new ManualClock());

    expect(await cache.target('aws-i-1')).toBeUndefined();
    await cache.refresh();
    const stopped = await cache.target('aws-i-2');

    expect(await cache.target('aws-i-1')).toMatchObject({ kind: 'vm', cloud: 'aws', address: '10.0.0.1' });
    expect(stopped && untargetableReason(stopped)).toMatch(/^The VM is stopped, not running/);
    expect((await cache.inventory()).groups).toEqual({ discovered_aws: ['aws-i-1'] });
  });

  it('keeps the previous list when a refresh fails, and says why', async () => {
    const cloud = new ScriptedCloud([vm()]);
    const cache = new DiscoveryCache([cloud], new ManualClock());
    await cache.refresh();

    cloud.answer = new Error('EC2 DescribeInstances in us-east-1 failed: UnauthorizedOperation: no');
    const snapshot = await cache.refresh();

    expect(snapshot.vms.map((v) => v.id)).toEqual(['aws-i-1']);
    expect(snapshot.clouds.aws).toMatchObject({
      count: 1,
      error: expect.stringMatching(/UnauthorizedOperation/),
    });
  });

  it('shares one round of calls between concurrent refreshes', async () => {
    const cloud = new ScriptedCloud([vm()]);
    const cache = new DiscoveryCache([cloud], new ManualClock());

    await Promise.all([cache.refresh(), cache.refresh(), cache.refresh()]);

    expect(cloud.calls).toBe(1);
  });

  it('records a cloud that takes longer than its time as failed, keeping its list', async () => {
    const slow: VmDiscovery = { cloud: 'aws', discover: () => new Promise(() => {}) };
    const store = new MemoryDiscoveryStore();
    await store.saveListing('aws', [discoveredRow(vm())], '2025-01-01T00:00:00.000Z');
    const cache = new DiscoveryCache([slow], new ManualClock(), undefined, { store, timeoutSeconds: 0.05 });

    const snapshot = await cache.refresh();

    expect(snapshot.clouds.aws).toEqual({
      count: 1,
      refreshedAt: '2025-01-01T00:00:00.000Z',
      error: 'aws did not answer within 0.05 s',
    });
  });

  it("records a list the store cannot keep as that cloud's error", async () => {
    const store = new MemoryDiscoveryStore();
    store.saveListing = async () => {
      throw new Error('The 90000 VMs listed take 900 KB compressed, more than one cache item holds');
    };
    const cache = new DiscoveryCache([new ScriptedCloud([vm()])], new ManualClock(), undefined, { store });

    const snapshot = await cache.refresh();

    expect(snapshot.clouds.aws?.error).toMatch(/^The 90000 VMs listed take 900 KB/);
    expect(snapshot.vms).toEqual([]);
  });

  it('reads, without listing, the clouds another cache wrote to the same store', async () => {
    const store = new MemoryDiscoveryStore();
    const cloud = new ScriptedCloud([vm()]);
    await new DiscoveryCache([cloud], new ManualClock(), undefined, { store }).refresh();
    const reader = new DiscoveryCache([], new ManualClock(), undefined, { store, clouds: ['aws', 'gcp'] });

    const snapshot = await reader.refresh();

    expect(cloud.calls).toBe(1);
    expect(snapshot.clouds).toEqual({
      aws: { count: 1, refreshedAt: expect.any(String) },
      gcp: { count: 0 },
    });
    expect(await reader.target('aws-i-1')).toMatchObject({ address: '10.0.0.1' });
    // An id of a cloud this deployment does not list is no discovered VM, whatever the store holds.
    expect(
      await new DiscoveryCache([], new ManualClock(), undefined, { store, clouds: ['gcp'] }).target(
        'aws-i-1',
      ),
    ).toBeUndefined();
  });

  it('reuses a listing it read for lookupCacheSeconds, and reads again after that or after its own refresh', async () => {
    const store = new MemoryDiscoveryStore();
    await store.saveListing('aws', [discoveredRow(vm())], '2025-01-01T00:00:00.000Z');
    let reads = 0;
    const get = store.get.bind(store);
    store.get = (cloud) => {
      reads += 1;
      return get(cloud);
    };
    const clock = new ManualClock();
    const cache = new DiscoveryCache([new ScriptedCloud([vm()])], clock, undefined, {
      store,
      lookupCacheSeconds: 5,
    });

    await Promise.all([cache.target('aws-i-1'), cache.target('aws-i-1'), cache.target('aws-i-9')]);
    const batch = reads;
    clock.advance(5_001);
    await cache.target('aws-i-1');
    const later = reads;
    await cache.refresh();
    const beforeLookup = reads;
    await cache.target('aws-i-1');

    expect(batch).toBe(1);
    expect(later).toBe(2);
    expect(reads).toBe(beforeLookup + 1);
  });
});
