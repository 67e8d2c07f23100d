/**
 * Slots under a launch cap, shared by everyone who launches on one backend
 * scope (every dispatcher container, or the local-mode process). `scope`
 * names it like a budget's key (`gcp#<project>/<region>`,
 * `kubernetes#<namespace>`). Every operation is idempotent on the run id, so
 * a redelivered dispatch or a second release is harmless.
 *
 * @example
 * if (await slots.acquire('gcp#proj/europe-west1', 1000, run.id)) await launch();
 * // … when the run ends:
 * await slots.release('gcp#proj/europe-west1', run.id);
 */
export interface LaunchSlotStore {
  /** Hold a slot for `runId` when it holds one already or fewer than `cap` are held; false when full. */
  acquire(scope: string, cap: number, runId: string): Promise<boolean>;
  /** Let the run's slot go (nothing when it holds none). */
  release(scope: string, runId: string): Promise<void>;
  /** The runs holding a slot in `scope`, for the reconciler's pruning. */
  holders(scope: string): Promise<readonly string[]>;
}

/** One backend's cap: its scope key and how many runs may hold a slot at once. */
export interface LaunchCapScope {
  readonly key: string;
  readonly cap: number;
}
