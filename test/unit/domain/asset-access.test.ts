import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assetRoute,
  assetUrlTtlSeconds,
  STORAGE_BACKENDS,
  type StorageBackend,
} from '../../../shared/domain/asset-access.ts';
import { RUNNERS, type Runner } from '../../../shared/domain/run.ts';

const CLOUD_RUNNERS = RUNNERS.filter((r) => r !== 'local');
const OBJECT_STORES = STORAGE_BACKENDS.filter((b): b is Exclude<StorageBackend, 'local'> => b !== 'local');

describe('assetRoute', () => {
  it('hands the relay a file and every in-cloud runner a read URL, whatever the object store', () => {
    expect(assetRoute('local', { active: 'local' })).toEqual({ via: 'file' });
    for (const backend of OBJECT_STORES) {
      for (const runner of RUNNERS) expect(assetRoute(runner, { active: backend })).toEqual({ via: 'url' });
    }
  });

  it('refuses an in-cloud runner on local storage, naming the runner and the backend', () => {
    for (const runner of CLOUD_RUNNERS) {
      const route = assetRoute(runner, { active: 'local' });
      expect(route).toHaveProperty('refused');
      const reason = (route as { refused: string }).refused;
      expect(reason).toMatch(
        /^The (ECS|ACI|Cloud Run|Kubernetes pod) runner cannot read assets on the local filesystem storage backend/,
      );
      expect(reason).toContain('storage_backend');
    }
  });

  it('stages local assets for in-cloud runners when an object store is configured', () => {
    for (const staging of OBJECT_STORES) {
      for (const runner of CLOUD_RUNNERS) {
        expect(assetRoute(runner, { active: 'local', staging })).toEqual({ via: 'staged', staging });
      }
      // The relay on this host still reads the file itself.
      expect(assetRoute('local', { active: 'local', staging })).toEqual({ via: 'file' });
    }
  });

  it('answers the seeds\' "No active storage backend" for every runner when there is none', () => {
    for (const runner of RUNNERS) {
      expect(assetRoute(runner as Runner, { unavailable: 'storage_backend is gcs' })).toEqual({
        refused: 'No active storage backend: storage_backend is gcs',
      });
    }
  });
});

describe('assetUrlTtlSeconds', () => {
  it('lasts until the start deadline, never past the run deadline, and at least a second', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 60, max: 43_200 }),
        fc.integer({ min: -1e9, max: 1e9 }),
        fc.integer({ min: 0, max: 2e12 }),
        (start, untilDeadlineMs, now) => {
          const ttl = assetUrlTtlSeconds(start, now + untilDeadlineMs, now);
          expect(ttl).toBeGreaterThanOrEqual(1);
          expect(ttl).toBeLessThanOrEqual(start);
          if (untilDeadlineMs >= start * 1000) expect(ttl).toBe(start);
          else expect(ttl).toBe(Math.max(1, Math.floor(untilDeadlineMs / 1000)));
        },
      ),
    );
  });
});
