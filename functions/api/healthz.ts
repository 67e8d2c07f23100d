import { type BareApiDeps, bareHttpHandler } from '../../shared/composition/lambda/bare.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /healthz — liveness, unauthenticated; says nothing about configuration. */
export const makeHealthz = (deps: BareApiDeps) =>
  httpHandler(deps, { public: true, handle: async () => json(200, { status: 'ok' }) });

export const handler = bareHttpHandler(makeHealthz);
