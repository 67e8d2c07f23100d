import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /assets: every asset on the active backend, sorted by path, each with its type badge. */
export const makeListAssets = (deps: ApiDeps) =>
  httpHandler(deps, {
    handle: async () => json(200, { assets: await deps.assets.list() }),
  });

export const handler = lambdaHttpHandler(makeListAssets);
