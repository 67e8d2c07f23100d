import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import type { ApiDeps } from './deps.ts';

/** GET /healthz — liveness, unauthenticated; says nothing about configuration. */
export const makeHealthz = (deps: ApiDeps) =>
  httpHandler(deps, { public: true, handle: async () => json(200, { status: 'ok' }) });

export const handler = lambdaHttpHandler(makeHealthz);
