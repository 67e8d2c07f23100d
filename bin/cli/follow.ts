import { ApiError, type Client, ConnectionError } from './api-client.ts';
import type { Io } from './io.ts';

interface LogPage {
  readonly state: string;
  readonly complete: boolean;
  readonly lines: readonly { readonly stream: string; readonly text: string }[];
  readonly nextCursor: string;
}

export interface FollowOptions {
  /** Wait between polls when nothing new arrived. */
  readonly intervalMs: number;
  /** Keep polling (until the run ends) rather than print what is there now. */
  readonly follow: boolean;
  /** Where output goes: `stdout` lines to the first, `stderr`/`system` lines to the second. */
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** Consecutive failed polls tolerated while following (a restarting API, a network blip). */
const MAX_POLL_FAILURES = 5;

const transient = (error: unknown): boolean =>
  error instanceof ConnectionError || (error instanceof ApiError && error.status >= 500);

/**
 * Print a run's output from the start, page by page, passing the cursor back.
 * With `follow`, keep polling until the API says the run is complete and a
 * page comes back empty — only then has every line been read. Returns the
 * run's state as of the last page.
 *
 * @example
 * const state = await printLogs(client, runId, io, { follow: true, intervalMs: 1000, out, err });
 */
export async function printLogs(
  client: Client,
  runId: string,
  io: Io,
  options: FollowOptions,
): Promise<string> {
  let cursor: string | undefined;
  let failures = 0;
  for (;;) {
    let page: LogPage;
    try {
      const query = cursor === undefined ? '' : `?cursor=${encodeURIComponent(cursor)}`;
      page = (await client.request<LogPage>('GET', `/runs/${encodeURIComponent(runId)}/logs${query}`)).body;
      failures = 0;
    } catch (error) {
      if (!options.follow || !transient(error) || ++failures > MAX_POLL_FAILURES) throw error;
      await io.sleep(options.intervalMs * failures);
      continue;
    }
    for (const line of page.lines) (line.stream === 'stdout' ? options.out : options.err)(`${line.text}\n`);
    cursor = page.nextCursor;
    if (page.lines.length > 0) continue;
    if (!options.follow || page.complete) return page.state;
    await io.sleep(options.intervalMs);
  }
}
