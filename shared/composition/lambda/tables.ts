import type { HttpHandler } from '../../http/handler.ts';
import { builtHttpHandler } from './first-call.ts';
import type { TableApiDeps } from './kinds.ts';

/**
 * API routes over the runs table alone (targets, runs, batches, the
 * inventory): one DynamoDB client and the settings, nothing else.
 *
 * @example
 * export const handler = tableHttpHandler(makeGetRun);
 */
export const tableHttpHandler = (make: (deps: TableApiDeps) => HttpHandler): HttpHandler =>
  builtHttpHandler(async () => (await import('./table-deps.ts')).tableApiDeps(process.env), make);

export type { TableApiDeps } from './kinds.ts';
