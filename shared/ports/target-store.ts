import type { Target } from '../domain/target.ts';

/**
 * The target registry: the machines and clusters runs are aimed at, by id.
 * Kept apart from the runs (RunStore) although one table or database file may
 * hold both; a re-PUT keeps the target's first `createdAt`.
 *
 * @example
 * const stored = await targets.putTarget({ ...target, updatedAt: clock.now() });
 * const target = await targets.getTarget(run.targetId);
 */
export interface TargetStore {
  /** Upsert; answers the target as stored (with the first `createdAt` it had). */
  putTarget(target: Target): Promise<Target>;
  getTarget(id: string): Promise<Target | undefined>;
  /** Sorted by id. */
  listTargets(): Promise<readonly Target[]>;
  /** True when something was deleted. */
  deleteTarget(id: string): Promise<boolean>;
}
