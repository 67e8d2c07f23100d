import { type BareApiDeps, bareHttpHandler } from '../../shared/composition/lambda/bare.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { openApiDocument } from '../../shared/http/openapi.ts';

/**
 * GET /openapi.json: the contract, generated from the same zod schemas the
 * handlers validate with. Public, like /healthz: it describes the API and
 * holds no data, and clients fetch it before they hold a token.
 */
export const makeGetOpenApi = (deps: BareApiDeps) =>
  httpHandler(deps, {
    public: true,
    handle: async () => json(200, openApiDocument(), { 'cache-control': 'public, max-age=300' }),
  });

export const handler = bareHttpHandler(makeGetOpenApi);
