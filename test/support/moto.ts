import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from './free-port.ts';

/**
 * One moto server per test file (moto 5.2.1), started as `python3 moto_server.py`.
 *
 * moto differs from AWS in ways tests must not rely on (shared/NOTES.md lists
 * them); each test file that meets one writes it down where it matters.
 *
 * moto_server.py (beside this file) exits when its stdin closes, so a test
 * worker that dies without running `afterAll` (killed, crashed) does not leave
 * a server behind: the pipe closes with the worker. It also routes each request
 * without the directory listing moto's own server makes per request (the file
 * says why).
 */

/** SDK client config for moto: fixed credentials, one region, and no retries so a failure is quick and readable. */
export interface MotoClientConfig {
  readonly endpoint: string;
  readonly region: 'us-east-1';
  readonly credentials: { readonly accessKeyId: 'test'; readonly secretAccessKey: 'test' };
  readonly maxAttempts: 1;
}

export interface MotoServer {
  readonly endpoint: string;
  /** Client config for every client except S3. */
  clientConfig(): MotoClientConfig;
  /** S3 needs path-style addressing against an IP endpoint (`http://127.0.0.1:port/bucket/key`). */
  s3ClientConfig(): MotoClientConfig & { readonly forcePathStyle: true };
  /** Environment an SDK client picks up without code (AWS_ENDPOINT_URL is honoured by every v3 client). */
  env(): Record<string, string>;
  /** `POST /moto-api/reset`: forget every resource in every service. */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** moto's server with its stdin watched and its service lookup cached. */
const SERVER = join(import.meta.dirname, 'moto_server.py');

const START_TIMEOUT_MS = 30_000;

async function answers(endpoint: string): Promise<boolean> {
  try {
    const response = await fetch(`${endpoint}/moto-api/data.json`, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.ok;
  } catch {
    return false;
  }
}

/** Close stdin (the server exits at once on EOF; moto keeps nothing worth a graceful stop), SIGKILL as a fallback. */
function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const hard = setTimeout(() => child.kill('SIGKILL'), 2000);
    child.once('exit', () => {
      clearTimeout(hard);
      resolve();
    });
    child.stdin?.end();
  });
}

/** How to start moto: moto_server.py, or a Python script that patches moto first (it must exit on stdin EOF too). */
export interface MotoStartOptions {
  /** A Python file run instead of moto_server.py, with the same `-H host -p port` arguments. */
  readonly script?: string;
  /** Added to this process's environment for the server (MOTO_ACCOUNT_ID, INITIAL_NO_AUTH_ACTION_COUNT …). */
  readonly env?: Readonly<Record<string, string>>;
}

async function spawnOnce(
  port: number,
  options: MotoStartOptions,
): Promise<{ child: ChildProcess; endpoint: string } | string> {
  const program = [options.script ?? SERVER];
  const child = spawn('python3', [...program, '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['pipe', 'ignore', 'pipe'],
    env: { ...process.env, ...options.env, MOTO_PORT: String(port) },
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    // moto logs every request on stderr; keep only the start for a failure message.
    if (stderr.length < 4000) stderr += chunk.toString();
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      return `moto exited (${child.exitCode ?? child.signalCode}) on port ${port}:\n${stderr}`;
    }
    if (await answers(endpoint)) return { child, endpoint };
    await sleep(50);
  }
  await killAndWait(child);
  return `moto did not answer on port ${port} within ${START_TIMEOUT_MS} ms:\n${stderr}`;
}

/**
 * Start a moto server on a free port and wait until it answers. Another
 * process can take the port between the probe and moto's bind, so a failed
 * start is retried on a new port.
 */
export async function startMoto(options: MotoStartOptions = {}): Promise<MotoServer> {
  const problems: string[] = [];
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const started = await spawnOnce(await freePort(), options);
    if (typeof started === 'string') {
      problems.push(started);
      continue;
    }
    const { child, endpoint } = started;
    // Last resort for a worker exiting without afterAll; stdin EOF covers a hard kill.
    const onExit = () => child.kill('SIGKILL');
    process.once('exit', onExit);
    const config: MotoClientConfig = {
      endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    };
    return {
      endpoint,
      clientConfig: () => config,
      s3ClientConfig: () => ({ ...config, forcePathStyle: true }),
      env: () => ({
        AWS_ENDPOINT_URL: endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_MAX_ATTEMPTS: '1',
      }),
      async reset() {
        const response = await fetch(`${endpoint}/moto-api/reset`, { method: 'POST' });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`moto reset answered ${response.status}`);
      },
      async stop() {
        process.removeListener('exit', onExit);
        await killAndWait(child);
      },
    };
  }
  throw new Error(`Could not start moto:\n${problems.join('\n')}`);
}

/**
 * Start moto before the file's tests and stop it after them, whether they
 * passed or not. Read `moto()` inside hooks and tests, not at import time.
 *
 * @example
 * const moto = useMoto();
 * beforeEach(() => moto().reset());
 * it('…', async () => { const sqs = new SQSClient(moto().clientConfig()); … });
 */
export function useMoto(options: MotoStartOptions = {}): () => MotoServer {
  let server: MotoServer | undefined;
  beforeAll(
    async () => {
      server = await startMoto(options);
    },
    START_TIMEOUT_MS * 3 + 5000,
  );
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (server === undefined) throw new Error('moto is not running: call moto() inside a hook or a test');
    return server;
  };
}

/**
 * moto's DynamoDB backend is not thread-safe, and moto serves each request on
 * its own thread: TransactWriteItems deep-copies the table while a concurrent
 * request changes it, and moto answers an HTML 500 ("dictionary changed size
 * during iteration"); and an `ADD` to one item from two requests at once can
 * answer both the same new value (1 duplicate in 600 concurrent ADDs, seen
 * here), where DynamoDB's is atomic. AWS has neither problem. This keeps one
 * request of the client in flight at a time, so a concurrency test exercises
 * the adapter's conditions and retries rather than those moto bugs.
 *
 * @example
 * const client = oneRequestAtATime(new DynamoDBClient(moto().clientConfig()));
 */
export function oneRequestAtATime<T extends { middlewareStack: { add: (...args: any[]) => void } }>(
  client: T,
): T {
  let tail: Promise<unknown> = Promise.resolve();
  client.middlewareStack.add(
    (next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
      const turn = tail.then(() => next(args));
      tail = turn.catch(() => undefined);
      return turn;
    },
    { step: 'initialize', name: 'motoOneRequestAtATime' },
  );
  return client;
}

/** The runs table as AWS mode's bootstrap creates it (keys, indexes, TTL). */
export { createRunTable } from '../../bin/aws-mode/bootstrap.ts';
