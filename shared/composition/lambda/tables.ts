import type { HttpHandler } from '../../http/handler.ts';
import { builtHttpHandler, builtOnFirstCall, type Handler } from './first-call.ts';
import type { TableApiDeps, TableDeps } from './kinds.ts';

/**
 * API routes over the runs table alone (targets, runs, batches, the
 * inventory): one DynamoDB client and the settings, nothing else.
 *
 * @example
 * export const handler = tableHttpHandler(makeGetRun);
 */
export const tableHttpHandler = (make: (deps: TableApiDeps) => HttpHandler): HttpHandler =>
  builtHttpHandler(async () => (await import('./table-deps.ts')).tableApiDeps(process.env), make);

/**
 * Any other function over the runs table alone (the scheduled discovery
 * refresh): the same one DynamoDB client, without the whole AWS composition
 * (shared/composition/aws.ts) and the five other SDK clients it loads.
 *
 * @example
 * export const handler = tableHandler((deps) => makeRefreshSchedule(deps));
 */
export const tableHandler = <E, R>(make: (deps: TableDeps) => Handler<E, R>): Handler<E, R> =>
  builtOnFirstCall(async () => (await import('./table-deps.ts')).tableDeps(process.env), make);

export type { TableApiDeps, TableDeps } from './kinds.ts';
