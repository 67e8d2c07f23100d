import type { HttpHandler } from '../../http/handler.ts';
import { builtHttpHandler } from './first-call.ts';
import type { BareApiDeps } from './kinds.ts';

/**
 * API routes that touch no AWS service and read no settings (/healthz,
 * /openapi.json, the discovery routes of a deployed stack): a logger and API
 * Gateway's caller identity, nothing else — no SDK client is bundled or made.
 *
 * @example
 * export const handler = bareHttpHandler(makeHealthz);
 */
export const bareHttpHandler = (make: (deps: BareApiDeps) => HttpHandler): HttpHandler =>
  builtHttpHandler(async () => (await import('./bare-deps.ts')).bareApiDeps(process.env), make);

export type { BareApiDeps } from './kinds.ts';
