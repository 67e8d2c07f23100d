import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { ApiDeps } from '../http/api-deps.ts';
import type { HttpHandler } from '../http/handler.ts';
import type { AwsDeps } from './aws.ts';

/*
 * `./aws.ts` is imported only inside the handlers below, never at the top of
 * this module (the `import type` above is erased): every entry file under
 * functions/ imports this module to export its `handler`, and local mode
 * imports those files for their factories. A static import would load the
 * AWS SDK into local mode; this way it loads on the first Lambda invocation,
 * once per cold start.
 */

type Handler<E, R> = (event: E, context: Context) => Promise<R>;

/**
 * Build on the first invocation and keep the result for the life of the
 * Lambda container. A failed build (a bad environment) is not kept: the next
 * invocation tries again and reports the same problems.
 */
function builtOnFirstCall<D, E, R>(load: () => Promise<D>, make: (deps: D) => Handler<E, R>): Handler<E, R> {
  let built: Promise<Handler<E, R>> | undefined;
  const handler = (): Promise<Handler<E, R>> => {
    built ??= load()
      .then(make)
      .catch((error: unknown) => {
        built = undefined;
        throw error;
      });
    return built;
  };
  return async (event, context) => (await handler())(event, context);
}

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
 * The Lambda `handler` for one API route: the route's factory with API
 * Gateway's caller identity as the authenticator.
 *
 * @example
 * // functions/api/get-run.ts
 * export const handler = lambdaHttpHandler(makeGetRun);
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
