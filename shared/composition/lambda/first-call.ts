import type { Context } from 'aws-lambda';
import type { HttpDeps, HttpHandler } from '../../http/handler.ts';

export type Handler<E, R> = (event: E, context: Context) => Promise<R>;

/**
 * Build on the first invocation and keep the result for the life of the
 * Lambda container. A failed build (a bad environment) is not kept: the next
 * invocation tries again and reports the same problems.
 *
 * `load` is a function kind's composition (shared/composition/lambda/*-deps.ts),
 * reached through a dynamic `import()` in the module that calls this one: the
 * entry files under functions/ are imported by local mode for their
 * factories, and a static import would load the AWS SDK into it.
 *
 * @example
 * export const tableHttpHandler = <D>(make: (deps: TableApiDeps) => HttpHandler) =>
 *   builtOnFirstCall(async () => (await import('./table-deps.ts')).tableApiDeps(), make);
 */
export function builtOnFirstCall<D, E, R>(
  load: () => Promise<D>,
  make: (deps: D) => Handler<E, R>,
): Handler<E, R> {
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

/** `builtOnFirstCall` for an API route, over any kind's deps that include HttpDeps. */
export const builtHttpHandler = <D extends HttpDeps>(
  load: () => Promise<D>,
  make: (deps: D) => HttpHandler,
): HttpHandler => builtOnFirstCall(load, make);
