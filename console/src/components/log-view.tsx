import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, type LogLine } from '../api/client.ts';
import { DEFAULT_MASK } from '../mask.ts';

/** Every line is one row of this height (CSS `--log-line`), so the window is arithmetic, not measurement. */
const LINE_PX = 20;
/** Rows rendered above and below the visible ones, so a fast scroll never shows a blank edge. */
const OVERSCAN = 40;
/** The largest page the API serves (LOG_PAGE_MAX_LINES; more is a 400): a long log catches up in few requests. */
const PAGE = 1000;

/** A line's text with each masked secret marked, so an operator sees that a value was redacted there. */
function LineText({ text }: { text: string }) {
  if (!text.includes(DEFAULT_MASK)) return <>{text}</>;
  const parts = text.split(DEFAULT_MASK);
  return (
    <>
      {parts.map((part, i) => (
        <span key={i}>
          {part}
          {i < parts.length - 1 && (
            <mark class="masked" title="masked secret">
              {DEFAULT_MASK}
            </mark>
          )}
        </span>
      ))}
    </>
  );
}

/**
 * The run's output, followed until the run has ended. Lines are kept in a
 * plain array outside component state (a 50 MB log is half a million lines)
 * and only the rows in view are rendered. It sticks to the bottom while the
 * reader is there; scrolled up, it keeps its place and offers a way back.
 */
export function LogView({ runId, onEnded }: { runId: string; onEnded?: () => void }) {
  const lines = useRef<LogLine[]>([]);
  const box = useRef<HTMLDivElement>(null);
  const [count, setCount] = useState(0);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(400);
  const [follow, setFollow] = useState(true);
  const [status, setStatus] = useState<'following' | 'complete' | 'error'>('following');
  const followRef = useRef(true);
  followRef.current = follow;

  useEffect(() => {
    lines.current = [];
    setCount(0);
    setStatus('following');
    const controller = new AbortController();
    let cursor: string | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pull = async () => {
      let wait = 1000;
      try {
        const { data } = await api.GET('/runs/{id}/logs', {
          params: { path: { id: runId }, query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
          signal: controller.signal,
        });
        if (data) {
          for (const line of data.lines) lines.current.push(line);
          cursor = data.nextCursor;
          if (data.lines.length > 0) setCount(lines.current.length);
          // A full page means more is waiting: ask again at once.
          if (data.lines.length >= PAGE) wait = 0;
          else if (data.complete) {
            setStatus('complete');
            onEnded?.();
            return;
          }
        } else setStatus('error');
      } catch {
        if (controller.signal.aborted) return;
        setStatus('error');
      }
      timer = setTimeout(pull, document.hidden ? wait * 5 : wait);
    };
    void pull();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, [runId]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const observer = new ResizeObserver(() => setHeight(el.clientHeight));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);

  // After new lines render, a reader at the bottom stays at the bottom.
  useLayoutEffect(() => {
    const el = box.current;
    if (el && followRef.current) el.scrollTop = el.scrollHeight;
  }, [count]);

  function onScroll() {
    const el = box.current;
    if (!el) return;
    setScrollTop(el.scrollTop);
    const atBottom = el.scrollTop + el.clientHeight >= el.scrollHeight - LINE_PX;
    if (atBottom !== followRef.current) setFollow(atBottom);
  }

  function jumpToEnd() {
    setFollow(true);
    const el = box.current;
    if (el) el.scrollTop = el.scrollHeight;
  }

  const first = Math.max(0, Math.floor(scrollTop / LINE_PX) - OVERSCAN);
  const last = Math.min(count, Math.ceil((scrollTop + height) / LINE_PX) + OVERSCAN);
  const visible = lines.current.slice(first, last);

  return (
    <section class="log" aria-labelledby="log-h">
      <div class="page-head">
        <h2 id="log-h">Output</h2>
        <span class="hint" role="status">
          {count} line{count === 1 ? '' : 's'} ·{' '}
          {status === 'complete'
            ? 'complete'
            : status === 'error'
              ? 'could not read the log; retrying'
              : 'following'}
        </span>
        {!follow && (
          <button type="button" class="secondary" onClick={jumpToEnd}>
            Follow latest
          </button>
        )}
      </div>
      <div
        class="log-box"
        ref={box}
        onScroll={onScroll}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: the output scrolls; the keyboard must be able to scroll it
        tabIndex={0}
        role="log"
        aria-live="off"
        aria-label="Run output"
        data-follow={follow ? 'true' : 'false'}
      >
        <div class="log-spacer" style={{ height: `${count * LINE_PX}px` }}>
          <div class="log-window" style={{ transform: `translateY(${first * LINE_PX}px)` }}>
            {visible.map((line) => (
              <div key={line.seq} class={`log-line ${line.stream}`}>
                <LineText text={line.text} />
              </div>
            ))}
          </div>
        </div>
        {count === 0 && (
          <p class="hint log-empty">{status === 'complete' ? 'No output.' : 'Waiting for output…'}</p>
        )}
      </div>
    </section>
  );
}
