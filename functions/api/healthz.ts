import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /healthz — liveness, unauthenticated; says nothing about configuration. */
export const makeHealthz = (deps: ApiDeps) =>
  httpHandler(deps, { public: true, handle: async () => json(200, { status: 'ok' }) });

export const handler = lambdaHttpHandler(makeHealthz);
