import { useEffect, useRef, useState } from 'preact/hooks';
import { asProblem, networkProblem, type Problem } from './api/client.ts';

/**
 * Calls `tick` now and then every `everyMs` until it returns false or the
 * component goes away. The next call waits for the previous one to finish, so
 * a slow API is never asked twice at once; a hidden tab is polled less often.
 */
export function usePoll(
  tick: (signal: AbortSignal) => Promise<boolean | undefined>,
  everyMs: number,
  deps: unknown[],
) {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const loop = async () => {
      let again: boolean | undefined = true;
      try {
        again = await latest.current(controller.signal);
      } catch {
        // A failed poll is shown by the page itself; keep polling so it recovers when the API does.
      }
      if (controller.signal.aborted || again === false) return;
      timer = setTimeout(loop, document.hidden ? everyMs * 5 : everyMs);
    };
    void loop();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, deps);
}

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly problem: Problem | undefined;
  reload(): void;
}

/** One GET whose answer a page shows, with its problem when it fails, and a way to ask again. */
export function useLoad<T>(
  load: () => Promise<{ data?: T; error?: unknown; response: Response }>,
): Loaded<T> {
  const [data, setData] = useState<T>();
  const [problem, setProblem] = useState<Problem>();
  const [round, setRound] = useState(0);
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    let live = true;
    latest
      .current()
      .then(({ data: answer, error, response }) => {
        if (!live) return;
        if (answer !== undefined) {
          setData(answer);
          setProblem(undefined);
        } else setProblem(asProblem(error, response));
      })
      .catch((error: unknown) => live && setProblem(networkProblem(error)));
    return () => {
      live = false;
    };
  }, [round]);
  return { data, problem, reload: () => setRound((r) => r + 1) };
}
