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

/** What an openapi-fetch call resolves to. */
type Answer<T> = { data?: T; error?: unknown; response: Response };

/**
 * Polls one resource every `everyMs` (see usePoll): its data goes to `use`, which says whether to poll
 * again. A problem goes to `setProblem` and polling goes on, so the page recovers when the API does;
 * a 404 (it does not exist) ends it.
 */
export function usePollOne<T>(
  call: (signal: AbortSignal) => Promise<Answer<T>>,
  use: (data: T) => boolean,
  setProblem: (problem: Problem) => void,
  everyMs: number,
  deps: unknown[],
) {
  usePoll(
    async (signal) => {
      try {
        const { data, error, response } = await call(signal);
        if (data !== undefined) return use(data);
        setProblem(asProblem(error, response));
        return response.status !== 404;
      } catch (error) {
        if (!signal.aborted) setProblem(networkProblem(error));
        return true;
      }
    },
    everyMs,
    deps,
  );
}

export interface Action {
  /** A request is under way: its button is disabled and says so. */
  readonly busy: boolean;
  readonly problem: Problem | undefined;
  /** The page's own checks (and its polls) show their problem in the same place. */
  setProblem(problem: Problem | undefined): void;
  /** Busy while `work` runs; what it throws is shown as the API being unreachable. */
  run(work: () => Promise<void>): Promise<void>;
  /** `run` of one API call: its data goes to `use`, else the API's problem is shown. */
  request<T>(call: () => Promise<Answer<T>>, use: (data: T, response: Response) => void): Promise<void>;
}

/**
 * What a form or button sends: busy while it is under way, and the problem it ended with.
 *
 * @example
 * const cancel = useAction();
 * cancel.request(() => api.POST('/runs/{id}/cancel', { params: { path: { id } } }), setRun);
 */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Problem>();
  async function run(work: () => Promise<void>) {
    setBusy(true);
    try {
      await work();
    } catch (error) {
      setProblem(networkProblem(error));
    } finally {
      setBusy(false);
    }
  }
  return {
    busy,
    problem,
    setProblem,
    run,
    request: (call, use) =>
      run(async () => {
        const { data, error, response } = await call();
        if (data !== undefined) use(data, response);
        else setProblem(asProblem(error, response));
      }),
  };
}

export interface Loaded<T> {
  readonly data: T | undefined;
  readonly problem: Problem | undefined;
  reload(): void;
}

/** One GET whose answer a page shows, with its problem when it fails, and a way to ask again. */
export function useLoad<T>(load: () => Promise<Answer<T>>): Loaded<T> {
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
