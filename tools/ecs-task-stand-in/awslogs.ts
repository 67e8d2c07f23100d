import {
  type CloudWatchLogsClient,
  CreateLogStreamCommand,
  type InputLogEvent,
  PutLogEventsCommand,
  ResourceAlreadyExistsException,
} from '@aws-sdk/client-cloudwatch-logs';
import type { ContainerDefinition } from '@aws-sdk/client-ecs';

/** PutLogEvents takes at most 10,000 events; a few hundred keeps each call small and the output prompt. */
const MAX_BATCH = 500;
/** How long a line may wait for others before it is sent: a follower sees output about this late. */
const FLUSH_MS = 200;

/**
 * What the ECS `awslogs` log driver does with a container's stdout and
 * stderr: one stream (`<prefix>/<container>/<task id>`) in the group, one
 * event per line, in order, each stamped with the time it was read. The driver
 * creates the stream when the container starts.
 *
 * @example
 * const out = await AwslogsStream.open(logs, '/remote-worker/runs', 'run/runner/0f3c…');
 * child.stdout.on('data', (chunk) => out.write(chunk));
 * await out.close();
 */
export class AwslogsStream {
  readonly #client: CloudWatchLogsClient;
  readonly #group: string;
  readonly #stream: string;
  #pending: InputLogEvent[] = [];
  /** Text after the last newline of the last chunk: half a line waits for its end. */
  #partial = '';
  #lastTimestamp = 0;
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> = Promise.resolve();
  #failure: Error | undefined;

  private constructor(client: CloudWatchLogsClient, group: string, stream: string) {
    this.#client = client;
    this.#group = group;
    this.#stream = stream;
  }

  static async open(client: CloudWatchLogsClient, group: string, stream: string): Promise<AwslogsStream> {
    try {
      await client.send(new CreateLogStreamCommand({ logGroupName: group, logStreamName: stream }));
    } catch (error) {
      if (!(error instanceof ResourceAlreadyExistsException)) throw error;
    }
    return new AwslogsStream(client, group, stream);
  }

  write(chunk: Buffer | string): void {
    const lines = (this.#partial + chunk.toString()).split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) this.#add(line);
    if (this.#pending.length >= MAX_BATCH) this.#flush();
    else this.#timer ??= setTimeout(() => this.#flush(), FLUSH_MS);
  }

  /** Send what is left, the unfinished last line too; rejects if any batch could not be written. */
  async close(): Promise<void> {
    if (this.#partial !== '') this.#add(this.#partial);
    this.#partial = '';
    this.#flush();
    await this.#sending;
    if (this.#failure !== undefined) throw this.#failure;
  }

  #add(raw: string): void {
    const line = raw.replace(/\r$/, '');
    // CloudWatch refuses an empty message; the Docker awslogs driver drops blank lines too.
    if (line === '') return;
    // Events in one PutLogEvents call must be in time order; two lines in the same millisecond keep theirs.
    this.#lastTimestamp = Math.max(this.#lastTimestamp, Date.now());
    this.#pending.push({ timestamp: this.#lastTimestamp, message: line });
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, MAX_BATCH);
      this.#sending = this.#sending.then(async () => {
        try {
          await this.#client.send(
            new PutLogEventsCommand({
              logGroupName: this.#group,
              logStreamName: this.#stream,
              logEvents: batch,
            }),
          );
        } catch (error) {
          this.#failure ??= error as Error;
        }
      });
    }
  }
}

/**
 * The awslogs driver's stream of a task's container, when the container logs
 * with it; undefined otherwise (output then goes nowhere, as on ECS).
 */
export async function awslogsStreamFor(
  logs: CloudWatchLogsClient,
  definition: ContainerDefinition,
  taskArn: string,
): Promise<AwslogsStream | undefined> {
  const config = definition.logConfiguration;
  const group = config?.options?.['awslogs-group'];
  if (config?.logDriver !== 'awslogs' || group === undefined) return undefined;
  const prefix = config.options?.['awslogs-stream-prefix'];
  const taskId = taskArn.split('/').at(-1) ?? taskArn;
  // Fargate requires a prefix; without one the stream is named by the task id alone.
  const stream = prefix === undefined ? taskId : `${prefix}/${definition.name}/${taskId}`;
  return AwslogsStream.open(logs, group, stream);
}
