/** The problem+json body the API answers errors with (RFC 9457). */
export interface Problem {
  readonly type?: string;
  readonly title?: string;
  readonly status?: number;
  readonly detail?: string;
  readonly errors?: readonly { readonly path: string; readonly message: string }[];
  readonly targets?: readonly { readonly targetId: string; readonly reason: string }[];
}

/** The API answered with an error status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
    this.name = 'ApiError';
  }
}

/** The API could not be reached at all. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
}

export interface ApiResponse<T> {
  readonly status: number;
  readonly body: T;
}

/** What the commands need from the API; a fake in unit tests. */
export interface Client {
  request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Readonly<Record<string, string>>,
  ): Promise<ApiResponse<T>>;
}

/**
 * A thin fetch wrapper: bearer token, JSON in and out, errors as ApiError
 * (with the problem the API sent) or ConnectionError.
 *
 * @example
 * const api = new HttpClient('http://127.0.0.1:8080', process.env.REMOTE_WORKER_TOKEN);
 * const { body } = await api.request<{ runs: unknown[] }>('GET', '/runs');
 */
export class HttpClient implements Client {
  readonly #base: string;

  constructor(
    baseUrl: string,
    private readonly token: string | undefined,
  ) {
    this.#base = baseUrl.replace(/\/+$/, '');
  }

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    headers: Readonly<Record<string, string>> = {},
  ): Promise<ApiResponse<T>> {
    let res: Response;
    try {
      res = await fetch(this.#base + path, {
        method,
        headers: {
          accept: 'application/json, application/problem+json',
          ...(this.token === undefined || this.token === '' ? {} : { authorization: `Bearer ${this.token}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new ConnectionError(
        `Cannot reach ${this.#base}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      );
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const problem =
        typeof parsed === 'object' && parsed !== null
          ? (parsed as Problem)
          : { title: res.statusText || 'Error' };
      throw new ApiError(res.status, problem);
    }
    return { status: res.status, body: parsed as T };
  }
}
