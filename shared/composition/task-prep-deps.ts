import type { prepareTask } from '../app/task-prep.ts';
import type { Settings } from '../config/settings.ts';

/** What `prepareTask` reads: the stores, the secrets, the connection material. */
export type TaskPrepDeps = Parameters<typeof prepareTask>[0];

/**
 * `prepareTask`'s dependencies as both modes build them: what the caller
 * passes, with the asset read URLs' lifetime taken from the settings
 * (`start_deadline_seconds`). One home, so AWS and local mode cannot drift.
 *
 * @example
 * const prepareDeps = taskPrepDeps({ store, targets, assets, storage, secrets, clock, ...material });
 * await prepareTask(prepareDeps, run);
 */
export const taskPrepDeps = (
  deps: Omit<TaskPrepDeps, 'startDeadlineSeconds' | 'settings'> & {
    readonly settings: Pick<Settings, 'start_deadline_seconds'> & TaskPrepDeps['settings'];
  },
): TaskPrepDeps => ({ ...deps, startDeadlineSeconds: deps.settings.start_deadline_seconds });
