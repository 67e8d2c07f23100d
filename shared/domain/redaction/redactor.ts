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
 * What one scan of a redactor has decided so far: the output up to
 * `plainFrom` of the text, and the candidate, the leftmost match found so far
 * (longest for its start) in the scan's positions (characters, or a view's
 * symbols), `start` -1 when there is none. The automaton scanners share it;
 * their hot loops read no more of it than `start`.
 */
export class ScanOutput {
  out = '';
  plainFrom = 0;
  start = -1;
  end = -1;

  constructor(readonly text: string) {}

  /** A pattern of `length` positions (0: none) ends at `at`. */
  offer(length: number, at: number): void {
    if (length === 0) return;
    const start = at - length;
    if (this.start < 0 || start < this.start) {
      this.start = start;
      this.end = at;
    } else if (start === this.start) {
      this.end = at;
    }
  }

  /**
   * Whether the candidate is decided at `at`: no pattern still in progress
   * (`inProgress` positions read of it) can start at or before it, or the
   * text is over (`more` false).
   */
  decided(at: number, inProgress: number, more: boolean): boolean {
    return this.start >= 0 && (at - inProgress > this.start || !more);
  }

  /** Let text[plainFrom, from) through, write `replacement` for text[from, to), and drop the candidate. */
  commit(from: number, to: number, replacement: string): void {
    this.out += this.text.slice(this.plainFrom, from) + replacement;
    this.plainFrom = to;
    this.start = -1;
  }

  /** The scan's result: at the end of the text, all of it; otherwise the output up to `holdFrom` and the rest held back. */
  result(final: boolean, holdFrom: number): { out: string; rest: string } {
    const { out, plainFrom, text } = this;
    if (final) return { out: out + text.slice(plainFrom), rest: '' };
    const hold = Math.max(plainFrom, holdFrom);
    return { out: out + text.slice(plainFrom, hold), rest: text.slice(hold) };
  }
}

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
