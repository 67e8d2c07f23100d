import type { ApiDeps } from '../../http/api-deps.ts';
import type { HttpHandler } from '../../http/handler.ts';
import { builtHttpHandler } from './first-call.ts';

/**
 * The submit routes (POST /runs, POST /batches, POST /batches/{id}/retry):
 * the runs table, the asset bucket and the dispatch queue, with the runners
 * this deployment has read from its settings (submit-deps.ts).
 *
 * @example
 * export const handler = submitHttpHandler(makeSubmitRun);
 */
export const submitHttpHandler = (make: (deps: ApiDeps) => HttpHandler): HttpHandler =>
  builtHttpHandler(async () => (await import('./submit-deps.ts')).submitApiDeps(process.env), make);
