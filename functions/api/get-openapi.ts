import { type BareApiDeps, bareHttpHandler } from '../../shared/composition/lambda/bare.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { OPENAPI_JSON } from '../../shared/http/openapi-document.ts';

/**
 * GET /openapi.json: the contract, generated from the same zod schemas the
 * handlers validate with — ahead of time (bin/generate-openapi.ts), so this
 * function serves a string and loads no zod; a test keeps the string equal
 * to the document the schemas describe. Public, like /healthz: it describes
 * the API and holds no data, and clients fetch it before they hold a token.
 */
export const makeGetOpenApi = (deps: BareApiDeps) =>
  httpHandler(deps, {
    public: true,
    handle: async () => ({
      statusCode: 200,
      headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' },
      body: OPENAPI_JSON,
    }),
  });

export const handler = bareHttpHandler(makeGetOpenApi);
