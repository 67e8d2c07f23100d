import { createServer, type IncomingMessage, type Server } from 'node:http';

/** ECS's JSON-protocol target prefix (`X-Amz-Target: AmazonEC2ContainerServiceV20141113.RunTask`). */
const RUN_TASK = 'AmazonEC2ContainerServiceV20141113.RunTask';

export interface EcsThrottle {
  /** Point `AWS_ENDPOINT_URL_ECS` here. */
  readonly endpoint: string;
  /** RunTask calls passed to moto, by `startedBy`. */
  readonly accepted: Map<string, number>;
  /** RunTask calls answered ThrottlingException. */
  throttled: number;
  /** Throttle at another rate from now on, starting with a full bucket. */
  setBudget(budget: { readonly perSecond: number; readonly burst: number }): void;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A loopback proxy in front of moto's ECS that throttles RunTask the way AWS
 * does: a token bucket of `burst` refilled at `perSecond` (its own, textbook
 * implementation, in real time), answering what ECS answers above it — HTTP
 * 400 with `__type: ThrottlingException`, "Rate exceeded" — so the real SDK
 * parses a real throttling error. Every other call passes through unchanged.
 * moto itself never throttles.
 *
 * @example
 * const throttle = await startEcsThrottle(moto().endpoint, { perSecond: 20, burst: 100 });
 * vi.stubEnv('AWS_ENDPOINT_URL_ECS', throttle.endpoint);
 */
export async function startEcsThrottle(
  upstream: string,
  budget: { readonly perSecond: number; readonly burst: number },
): Promise<EcsThrottle> {
  let current = budget;
  let tokens = budget.burst;
  let last = performance.now();
  const state = { accepted: new Map<string, number>(), throttled: 0 };
  const server: Server = createServer(async (req, res) => {
    try {
      const body = await bodyOf(req);
      if (req.headers['x-amz-target'] === RUN_TASK) {
        const now = performance.now();
        tokens = Math.min(current.burst, tokens + ((now - last) / 1000) * current.perSecond);
        last = now;
        if (tokens < 1) {
          state.throttled += 1;
          res.writeHead(400, {
            'content-type': 'application/x-amz-json-1.1',
            'x-amzn-errortype': 'ThrottlingException',
          });
          res.end(JSON.stringify({ __type: 'ThrottlingException', message: 'Rate exceeded' }));
          return;
        }
        tokens -= 1;
        const startedBy = (JSON.parse(body.toString('utf8')) as { startedBy?: string }).startedBy ?? '(none)';
        state.accepted.set(startedBy, (state.accepted.get(startedBy) ?? 0) + 1);
      }
      const headers = Object.fromEntries(
        Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'content-length'),
      ) as Record<string, string>;
      const answer = await fetch(`${upstream}${req.url ?? '/'}`, {
        method: req.method ?? 'POST',
        headers,
        ...(body.length === 0 ? {} : { body }),
      });
      const bytes = Buffer.from(await answer.arrayBuffer());
      res.writeHead(answer.status, {
        'content-type': answer.headers.get('content-type') ?? 'application/json',
      });
      res.end(bytes);
    } catch (error) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return Object.assign(state, {
    endpoint: `http://127.0.0.1:${port}`,
    setBudget: (next: { readonly perSecond: number; readonly burst: number }) => {
      current = next;
      tokens = next.burst;
      last = performance.now();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}
