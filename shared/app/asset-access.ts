import { createHash } from 'node:crypto';
import {
  type AssetRoute,
  assetRoute,
  assetUrlTtlSeconds,
  type StorageSetup,
} from '../domain/asset-access.ts';
import { AssetExistsError, LaunchRejectedError } from '../domain/errors.ts';
import { deadlineOf, type Run, type Runner } from '../domain/run.ts';
import type { AssetLocation, AssetStore } from '../ports/asset-store.ts';
import type { Clock } from '../ports/clock.ts';

/**
 * This mode's asset storage: the active store, what it is, and in local mode
 * an object store local assets are copied to for in-cloud runners.
 */
export interface AssetStorage {
  readonly setup: StorageSetup;
  /** The active store (one that refuses every call with the reason when there is none). */
  readonly assets: AssetStore;
  /** Present exactly when `setup.staging` is. */
  readonly staging?: AssetStore;
}

/** Why `runner` cannot read this storage's assets (the submit-time check), or undefined. */
export function assetAccessProblem(storage: AssetStorage | undefined, runner: Runner): string | undefined {
  if (storage === undefined) return undefined;
  const route = assetRoute(runner, storage.setup);
  return 'refused' in route ? route.refused : undefined;
}

/**
 * Where the run's task finds its asset: the relay host's file, or a read URL
 * for exactly that object, valid until the run's start deadline. A local
 * asset bound for an in-cloud runner is copied to the staging store first,
 * under a content-addressed name, so an asset edited after the copy never
 * reaches a run that staged the older bytes under the same name.
 */
export async function taskAsset(
  storage: AssetStorage,
  run: Run,
  options: { readonly startDeadlineSeconds: number; readonly clock: Clock },
): Promise<AssetLocation> {
  const route: AssetRoute = assetRoute(run.runner ?? 'local', storage.setup);
  if ('refused' in route) throw new LaunchRejectedError(route.refused);
  if (route.via === 'file') return storage.assets.locate(run.asset);
  const ttl = assetUrlTtlSeconds(options.startDeadlineSeconds, deadlineOf(run), options.clock.nowMs());
  if (route.via === 'url') return { kind: 'url', url: await signed(storage.assets, run.asset, ttl) };

  const staging = storage.staging;
  const read = storage.assets.read;
  if (staging === undefined || read === undefined) {
    throw new LaunchRejectedError(`The asset ${run.asset} cannot be copied to the ${route.staging} store`);
  }
  const bytes = await read(run.asset);
  const key = `${createHash('sha256').update(bytes).digest('hex').slice(0, 32)}/${run.asset}`;
  try {
    await staging.put(key, bytes);
  } catch (error) {
    // Same name, same content hash: an earlier run staged exactly these bytes.
    if (!(error instanceof AssetExistsError)) throw error;
  }
  return { kind: 'url', url: await signed(staging, key, ttl) };
}

function signed(store: AssetStore, path: string, ttlSeconds: number): Promise<string> {
  if (store.grantRead === undefined) {
    return Promise.reject(new LaunchRejectedError('This asset store cannot hand a task a read URL'));
  }
  return store.grantRead(path, ttlSeconds);
}
