import type { HttpHandler } from '../../http/handler.ts';
import { builtHttpHandler } from './first-call.ts';
import type { AssetApiDeps } from './kinds.ts';

/**
 * API routes over the asset bucket alone (upload, list): one S3 client and
 * the settings, nothing else.
 *
 * @example
 * export const handler = assetHttpHandler(makeListAssets);
 */
export const assetHttpHandler = (make: (deps: AssetApiDeps) => HttpHandler): HttpHandler =>
  builtHttpHandler(async () => (await import('./asset-deps.ts')).assetApiDeps(process.env), make);

export type { AssetApiDeps } from './kinds.ts';
