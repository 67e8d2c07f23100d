import type { BareApiDeps } from '../../shared/composition/lambda/bare.ts';
import { ValidationError } from '../../shared/domain/errors.ts';
import type { HttpEvent, HttpHandler, HttpResult } from '../../shared/http/handler.ts';
import { OPENAPI_JSON } from '../../shared/http/openapi-document.ts';
import { problemResponse } from '../../shared/http/problem.ts';

/**
 * GET /openapi.json: the contract, generated from the same zod schemas the
 * handlers validate with — ahead of time (bin/generate-openapi.ts), so this
 * function serves a string and loads no zod; a test keeps the string equal
 * to the document the schemas describe. Public, like /healthz: it describes
 * the API and holds no data, and clients fetch it before they hold a token.
 *
 * Not built with httpHandler: a public route with no input and a constant
 * answer needs none of its stack (authentication, body parsing, middy), and
 * its cold start is then little more than loading the document. A body, which
 * this route does not take, is refused as httpHandler refuses it.
 */
export const makeGetOpenApi = (_deps?: BareApiDeps): HttpHandler =>
  Object.assign(
    async (event: HttpEvent): Promise<HttpResult> =>
      event.body !== undefined && event.body !== ''
        ? problemResponse(new ValidationError('This route takes no request body'), event.rawPath)
        : {
            statusCode: 200,
            headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' },
            body: OPENAPI_JSON,
          },
    { public: true as const },
  );

export const handler = makeGetOpenApi();
