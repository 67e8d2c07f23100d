/**
 * `load`, called once, on the first call of the function returned; a failed
 * load is not kept, so the next call tries again.
 *
 * @example
 * const client = onFirstUse(async () => new (await import('@google-cloud/run')).JobsClient());
 * await (await client()).getJob({ name });
 */
export function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  };
}
