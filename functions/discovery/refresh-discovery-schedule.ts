import type { AppDeps } from '../../shared/app/deps.ts';
import type { CloudDiscovery } from '../../shared/app/discovery.ts';
import { tableHandler } from '../../shared/composition/lambda/tables.ts';
import type { HostingCloud } from '../../shared/domain/target.ts';

/** What one scheduled refresh did: each cloud's count, time and error (never the rows themselves). */
export interface ScheduledRefreshOutcome {
  readonly clouds: Readonly<Partial<Record<HostingCloud, CloudDiscovery>>>;
}

/**
 * The scheduled refresh of discovered cloud VMs (an EventBridge rule every
 * discovery_refresh_seconds, infra/constructs/discovery-schedule.ts): list
 * every cloud in discovery_clouds again and write each one's list to the
 * runs table, as POST /discovery/refresh does. A cloud that fails keeps its
 * previous list with the reason; the function itself fails only when the
 * table cannot be written, so EventBridge's retry tries again.
 *
 * @example
 * const outcome = await makeRefreshSchedule(deps)(); // { clouds: { aws: { count: 3, refreshedAt } } }
 */
export const makeRefreshSchedule =
  (deps: Pick<AppDeps, 'discovery' | 'logger'>) => async (): Promise<ScheduledRefreshOutcome> => {
    if (deps.discovery === undefined) {
      deps.logger.warn('discovery: the schedule ran but discovery_clouds names no cloud with its scope set');
      return { clouds: {} };
    }
    const { clouds } = await deps.discovery.refresh();
    deps.logger.info('discovery: refreshed', { clouds });
    return { clouds };
  };

export const handler = tableHandler((deps) => makeRefreshSchedule(deps));
