/**
 * `make`, called on the first call of the function returned; every later call
 * answers the same value. A `make` that throws is not kept: the next call
 * tries again. (onFirstUse is the same for an asynchronous load.)
 *
 * @example
 * // One client per cold start, shared by every store built without an injected one.
 * const defaultClient = once(() => new S3Client({}));
 */
export function once<T>(make: () => T): () => T {
  let made: { readonly value: T } | undefined;
  return () => {
    made ??= { value: make() };
    return made.value;
  };
}
