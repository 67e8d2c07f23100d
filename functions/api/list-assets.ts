import { type AssetApiDeps, assetHttpHandler } from '../../shared/composition/lambda/assets.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /assets: every asset on the active backend, sorted by path, each with its type badge. */
export const makeListAssets = (deps: AssetApiDeps) =>
  httpHandler(deps, {
    handle: async () => json(200, { assets: await deps.assets.list() }),
  });

export const handler = assetHttpHandler(makeListAssets);
