import type { Runner } from '../domain/run.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { Launcher } from '../ports/launcher.ts';

/**
 * A launcher built on its first use. The composition root decides at start
 * whether a backend is configured (from settings alone), but loading a
 * cloud's SDK (google-gax, the Azure pipeline, the Kubernetes client) costs
 * every Lambda cold start hundreds of milliseconds — most handlers never
 * launch anything, and most deployments use one cloud. A failed load is not
 * kept: the next call tries again.
 *
 * @example
 * launchers.gcp = lazyLauncher('gcp', async () => new CloudRunLauncher({ … await import('@google-cloud/run') … }));
 */
export function lazyLauncher(backend: Runner, load: () => Promise<Launcher>): Launcher {
  const get = onFirstUse(load);
  return {
    backend,
    launch: async (request) => (await get()).launch(request),
    status: async (handle, run) => (await get()).status(handle, run),
    logs: async (handle, run, cursor, limit) => (await get()).logs(handle, run, cursor, limit),
    cancel: async (handle, run, graceSeconds) => (await get()).cancel(handle, run, graceSeconds),
    cleanup: async (handle, run) => (await get()).cleanup(handle, run),
  };
}
