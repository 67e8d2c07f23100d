import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { AccountCredentials } from './aws-config.ts';
import { awsEnv } from './aws-config.ts';
import type { StackFunction } from './deploy.ts';

/**
 * What the Lambda runtime does for a function, in a child `node` process:
 * import the bundle once (the cold start), then call `handler(event, context)`
 * for each invocation and answer with its result or its error. The child's
 * environment is the function's (Environment.Variables as deployed), the
 * variables the Lambda runtime adds, and the credentials of the function's
 * role — nothing of the test process's own environment but PATH.
 *
 * A JSON-protocol SDK client cannot parse moto's XML 403, so its error is a
 * SyntaxError; the runtime passes the answer's text along (`$responseBodyText`,
 * set by the SDK) so a failure can say what was denied.
 */
const RUNTIME = `
const { handler } = await import(process.env.RW_BUNDLE_URL);
const timeoutMs = Number(process.env.AWS_LAMBDA_FUNCTION_TIMEOUT) * 1000;
process.on('message', async ({ id, event }) => {
  const started = Date.now();
  const context = {
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: process.env.RW_FUNCTION_ARN,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: id,
    logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME,
    logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME,
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
  };
  try {
    const result = await handler(event, context);
    process.send({ id, result: result === undefined ? null : result });
  } catch (error) {
    process.send({ id, error: { name: error?.name, message: String(error?.message ?? error), body: error?.$responseBodyText } });
  }
});
process.send({ ready: true });
`;

export interface Invocation {
  readonly result?: unknown;
  readonly error?: { readonly name?: string; readonly message: string; readonly body?: string };
}

interface Pending {
  readonly resolve: (outcome: Invocation) => void;
}

/** One warm Lambda container for one function. */
export class LambdaContainer {
  readonly fn: StackFunction;
  readonly #child: ChildProcess;
  readonly #pending = new Map<string, Pending>();
  readonly #ready: Promise<void>;
  #output = '';
  invocations = 0;

  constructor(fn: StackFunction, bundle: string, endpoint: string, credentials: AccountCredentials) {
    this.fn = fn;
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      ...fn.environment,
      // What the Lambda runtime sets beside the function's own variables.
      AWS_LAMBDA_FUNCTION_NAME: fn.functionName,
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memoryMiB),
      AWS_LAMBDA_FUNCTION_TIMEOUT: String(fn.timeoutSeconds),
      AWS_LAMBDA_LOG_GROUP_NAME: fn.logGroupName,
      AWS_LAMBDA_LOG_STREAM_NAME: `deployed-stack/[$LATEST]${randomUUID().replaceAll('-', '')}`,
      AWS_LAMBDA_LOG_FORMAT: 'JSON',
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      LAMBDA_TASK_ROOT: '/var/task',
      TZ: ':UTC',
      ...awsEnv(endpoint, credentials),
      // Production retries throttling and 5xx; here moto's answers are final, and a denial is never retried anyway.
      AWS_MAX_ATTEMPTS: '1',
      RW_BUNDLE_URL: new URL(`file://${bundle}`).href,
      RW_FUNCTION_ARN: `arn:aws:lambda:${awsEnv(endpoint, credentials).AWS_REGION}:${fn.roleArn.split(':')[4]}:function:${fn.functionName}`,
    };
    this.#child = spawn(process.execPath, ['--input-type=module', '-e', RUNTIME], {
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const keep = (chunk: Buffer) => {
      this.#output += chunk.toString();
    };
    this.#child.stdout?.on('data', keep);
    this.#child.stderr?.on('data', keep);
    this.#ready = new Promise<void>((resolve, reject) => {
      this.#child.once('exit', (code, signal) => {
        const message = `${fn.id} exited (${code ?? signal}) before it was ready:\n${this.output()}`;
        reject(new Error(message));
        for (const p of this.#pending.values()) p.resolve({ error: { message } });
      });
      this.#child.on('message', (message: { ready?: boolean; id?: string } & Invocation) => {
        if (message.ready === true) {
          resolve();
          return;
        }
        const pending = this.#pending.get(message.id ?? '');
        this.#pending.delete(message.id ?? '');
        pending?.resolve(message);
      });
    });
    // Seen by the first invoke; until then an early exit must not be an unhandled rejection.
    this.#ready.catch(() => {});
  }

  /** What the function printed (Powertools' JSON log lines): CloudWatch Logs would keep it. */
  output(): string {
    return this.#output;
  }

  /** Powertools' JSON lines at ERROR level printed since `offset` (a swallowed failure still logs one). */
  errorsSince(offset: number): string[] {
    return this.#output
      .slice(offset)
      .split('\n')
      .filter((line) => /"level":"ERROR"/.test(line));
  }

  get outputLength(): number {
    return this.#output.length;
  }

  async invoke(event: unknown): Promise<Invocation> {
    await this.#ready;
    this.invocations += 1;
    const id = randomUUID();
    const deadline = (this.fn.timeoutSeconds + 5) * 1000;
    return new Promise<Invocation>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        resolve({ error: { name: 'TimeoutError', message: `${this.fn.id} timed out after ${deadline} ms` } });
      }, deadline);
      this.#pending.set(id, {
        resolve: (outcome) => {
          clearTimeout(timer);
          resolve(outcome);
        },
      });
      this.#child.send({ id, event });
    });
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      this.#child.once('exit', () => resolve());
      this.#child.kill('SIGKILL');
    });
  }
}
