/**
 * The stream interface every redaction pass implements, and the pieces that
 * make passes safe to combine: chaining two chunk-safe passes, holding back
 * an undecided tail between chunks, and withholding output once a pass fails.
 */
export interface Redactor {
  /** Redact a chunk; returns what can safely be written now (possibly empty). */
  push(chunk: string): string;
  /** End of stream: returns the held-back tail, redacted. The redactor can be reused afterwards. */
  flush(): string;
}

export const DEFAULT_MASK = '********';
/** What a caller writes instead of output it could not redact. */
export const REDACTOR_FAILED = 'output withheld: the redactor failed';

/** What one scan of the text returns: the decided output, and the undecided tail to scan again with more text. */
export type Scan = (text: string, final: boolean) => { out: string; rest: string };

/**
 * A Redactor over `scan`: each push scans the held-back tail and the new
 * chunk and holds back what is still undecided; flush scans the tail as the
 * end of the text. The output is the same for any chunking when `scan` is.
 */
export function holdingBack(scan: Scan): Redactor {
  let held = '';
  return {
    push(chunk) {
      if (chunk.length === 0) return '';
      const { out, rest } = scan(held + chunk, false);
      held = rest;
      return out;
    },
    flush() {
      const { out } = scan(held, true);
      held = '';
      return out;
    },
  };
}

/**
 * `second` applied to what `first` returns. Each is chunk-safe on its own, so
 * the pair is: `first` returns the same text for any chunking, `second` then
 * sees the same text, only cut differently.
 */
export function chain(first: Redactor, second: Redactor): Redactor {
  return {
    push: (chunk) => second.push(first.push(chunk)),
    flush: () => {
      const rest = first.flush();
      return second.push(rest) + second.flush();
    },
  };
}

/**
 * A redactor that withholds instead of failing open: when the wrapped
 * redactor throws, that call returns `notice` and every later call returns
 * nothing, because the redactor's state (and so what it already held back) is
 * no longer trustworthy. The error itself is dropped: its message could quote
 * the text being redacted. `failed` tells a caller that works in lines when to
 * end its partial line and write its own notice instead (pass `notice: ''`).
 *
 * @example
 * const r = safeRedactor(createRedactor(secrets));
 * process.stdout.write(r.push(chunk)); // 'output withheld: the redactor failed\n' once, if it ever throws
 */
export function safeRedactor(
  redactor: Redactor,
  notice: string = `${REDACTOR_FAILED}\n`,
): Redactor & { readonly failed: boolean } {
  let failed = false;
  const guard = (call: () => string): string => {
    if (failed) return '';
    try {
      return call();
    } catch {
      failed = true;
      return notice;
    }
  };
  return {
    push: (chunk) => guard(() => redactor.push(chunk)),
    flush: () => guard(() => redactor.flush()),
    get failed() {
      return failed;
    },
  };
}
