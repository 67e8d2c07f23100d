import type { HttpHandler } from '../../http/handler.ts';
import { bareApiDeps } from './bare-deps.ts';
import { builtHttpHandler } from './first-call.ts';
import type { BareApiDeps } from './kinds.ts';

/**
 * API routes that touch no AWS service and read no settings (/healthz,
 * /openapi.json, the discovery routes of a deployed stack): a logger and API
 * Gateway's caller identity, nothing else — no SDK client is bundled or made.
 *
 * The deps are imported statically, unlike the other kinds': they load no
 * SDK (local mode may import this module), and one file loads faster than an
 * entry and the chunk it imports on the first call.
 *
 * @example
 * export const handler = bareHttpHandler(makeHealthz);
 */
export const bareHttpHandler = (make: (deps: BareApiDeps) => HttpHandler): HttpHandler =>
  builtHttpHandler(async () => bareApiDeps(process.env), make);

export type { BareApiDeps } from './kinds.ts';
