import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { REDACTOR_FAILED, type Redactor, safeRedactor } from '../../shared/domain/redaction.ts';
import { SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';

/** A line longer than this is cut: one giant JSON blob must not hold all output in memory. */
const MAX_LINE_CHARS = 64 * 1024;

/**
 * Stream → decoder → redactor → whole lines, so a secret split across chunks
 * is still caught. When the redactor throws, the rest of the stream is read
 * and dropped: the line already redacted is written, then one notice line.
 * Exported for tests.
 *
 * @example
 * const out = pipeLines(child.stdout, compiled.redactor(), (line) => write(`${line}\n`));
 * await out.done;
 */
export function pipeLines(
  stream: Readable,
  redactor: Redactor,
  emit: (line: string) => void,
): { done: Promise<void>; finish: () => void } {
  const decoder = new StringDecoder('utf8');
  const safe = safeRedactor(redactor, '');
  let partial = '';
  let finished = false;
  let withheld = false;
  const take = (text: string): void => {
    if (withheld) return;
    if (safe.failed) {
      withheld = true;
      // `partial` holds only what the redactor returned before it failed.
      if (partial !== '') emit(partial);
      partial = '';
      emit(`${SHIM_PREFIX}${REDACTOR_FAILED}`);
      return;
    }
    partial += text;
    let nl = partial.indexOf('\n');
    while (nl >= 0) {
      emit(partial.slice(0, nl).replace(/\r$/, ''));
      partial = partial.slice(nl + 1);
      nl = partial.indexOf('\n');
    }
    while (partial.length > MAX_LINE_CHARS) {
      emit(partial.slice(0, MAX_LINE_CHARS));
      partial = partial.slice(MAX_LINE_CHARS);
    }
  };
  let resolveDone: () => void = () => {};
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  const finish = (): void => {
    if (finished) return;
    finished = true;
    take(safe.push(decoder.end()));
    take(safe.flush());
    if (partial !== '') emit(partial);
    partial = '';
    resolveDone();
  };
  stream.on('data', (chunk: Buffer) => {
    if (!finished) take(safe.push(decoder.write(chunk)));
  });
  stream.on('end', finish);
  stream.on('error', finish);
  return { done, finish };
}
