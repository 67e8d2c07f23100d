/**
 * A mutex per key, within one process: `run(key, fn)` waits for every
 * earlier `run` with the same key to settle, then runs `fn`. Different keys
 * do not wait for each other. A key's entry is dropped when its queue empties,
 * so the map holds only keys in use. A failing `fn` releases the lock too.
 *
 * @example
 * const lock = new KeyedLock();
 * await lock.run(`${namespace}/${pod}`, () => appendToArchive(lines)); // one writer per pod
 */
export class KeyedLock {
  /** Per key: the tail of its queue. */
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => mine);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with a holder or a waiter (for tests). */
  get size(): number {
    return this.#tails.size;
  }
}
