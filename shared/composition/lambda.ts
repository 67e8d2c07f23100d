import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ApiDeps } from '../http/api-deps.ts';
import type { HttpHandler } from '../http/handler.ts';
import type { AwsDeps } from './aws.ts';
import { builtOnFirstCall, type Handler } from './lambda/first-call.ts';

/*
 * The whole AWS composition root, for the functions that launch, observe,
 * cancel or settle runs and for submits (they check every runner's
 * availability). Functions that need less import their kind's helper
 * instead (shared/composition/lambda/: bare.ts, tables.ts, assets.ts), so
 * their bundles hold only what they use.
 *
 * `./aws.ts` is imported only inside the handlers below, never at the top of
 * this module (the `import type` above is erased): local mode imports the
 * entry files for their factories, and a static import would load the AWS
 * SDK into it. This way it loads on the first Lambda invocation, once per
 * cold start.
 */

/**
 * The Lambda `handler` for any event source: `make` over the AWS composition
 * root (shared/composition/aws.ts), built on the first event.
 *
 * @example
 * // functions/status-sync/reconcile-runs.ts
 * export const handler = lambdaHandler((deps) => makeReconcileRuns(deps, { … }));
 */
export function lambdaHandler<E, R>(make: (deps: AwsDeps) => Handler<E, R>): Handler<E, R> {
  return builtOnFirstCall(async () => (await import('./aws.ts')).awsDeps(), make);
}

/**
 * The Lambda `handler` for one API route over the whole composition root,
 * with API Gateway's caller identity as the authenticator.
 *
 * @example
 * // functions/api/submit-run.ts
 * export const handler = lambdaHttpHandler(makeSubmitRun);
 */
export function lambdaHttpHandler(make: (deps: ApiDeps) => HttpHandler): HttpHandler {
  return builtOnFirstCall(async () => (await import('./aws.ts')).awsApiDeps(), make);
}

/**
 * The Lambda `handler` for an SQS-triggered function (partial batch responses).
 *
 * @example
 * // functions/dispatcher/dispatch-runs.ts
 * export const handler = lambdaSqsHandler(makeDispatchRuns);
 */
export function lambdaSqsHandler(
  make: (deps: AwsDeps) => Handler<SQSEvent, SQSBatchResponse>,
): Handler<SQSEvent, SQSBatchResponse> {
  return lambdaHandler(make);
}
