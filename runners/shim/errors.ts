import { SHIM_EXIT } from '../../shared/domain/shim-protocol.ts';

/**
 * A failure the shim reports itself: its message becomes the shim's last
 * output lines (redacted) and the exit record's reason, its `exitCode` the
 * shim's exit code (125 unless said otherwise).
 *
 * @example
 * throw new ShimError('the asset /x is not a file');
 * throw new ShimError('cannot run kubectl: not found on PATH', SHIM_EXIT.notFound);
 */
export class ShimError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = SHIM_EXIT.shimFailed,
  ) {
    super(message);
    this.name = 'ShimError';
  }
}

/** `fn()`, with any plain Error it throws turned into a {@link ShimError} with the same message. */
export function orShimError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw error instanceof ShimError ? error : new ShimError((error as Error).message);
  }
}
