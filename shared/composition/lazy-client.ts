/**
 * An SDK client made on its first use rather than at cold start: a function
 * that only sometimes needs CloudWatch Logs, ECS or Secrets Manager pays for
 * constructing them (config resolution, credential chain) only when it does.
 * Every property read goes to the client, made once.
 *
 * @example
 * const ecs = lazyClient(() => new ECSClient({}));
 * await ecs.send(new RunTaskCommand(input)); // the client is made here
 */
export function lazyClient<T extends object>(make: () => T): T {
  let client: T | undefined;
  const get = (): T => {
    client ??= make();
    return client;
  };
  return new Proxy({} as T, {
    get: (_target, key) => {
      const value: unknown = Reflect.get(get(), key);
      return typeof value === 'function' ? value.bind(get()) : value;
    },
    has: (_target, key) => Reflect.has(get(), key),
  });
}
