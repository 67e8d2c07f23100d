import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  GetQueueUrlCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { ScheduledEvent } from 'aws-lambda';
import { API_HANDLERS, constructIdOf } from '../../../infra/handlers.ts';
import { sqsEvent } from '../../support/sqs-event.ts';
import { type AccountCredentials, awsConfig, REGION } from './aws-config.ts';
import type { DeployedStack } from './deploy.ts';
import { describeDenials, type IamDecisions } from './iam-decisions.ts';
import { type Invocation, LambdaContainer } from './lambda-runtime.ts';

export interface ApiAnswer {
  readonly statusCode: number;
  readonly body: any;
}

/** Raised when a step of the path fails; its message names every call moto denied during the step. */
export class PathStepError extends Error {
  override readonly name = 'PathStepError';
}

/**
 * A deployed stack's functions, each in its own warm container with its own
 * role's credentials, and the event sources between them as AWS would run
 * them: API Gateway's payload 2.0 events, the SQS event source mappings
 * (receiving and deleting with the function's role, as Lambda's pollers do),
 * EventBridge's rule targets and schedules.
 */
export class StackHarness {
  readonly stack: DeployedStack;
  readonly #endpoint: string;
  readonly #bundles: Readonly<Record<string, string>>;
  readonly #credentials: Readonly<Record<string, AccountCredentials>>;
  readonly #decisions: IamDecisions;
  readonly #containers = new Map<string, LambdaContainer>();
  readonly #sqs = new Map<string, SQSClient>();
  /** The caller API Gateway's IAM authorizer verified, as it puts it in the event. */
  readonly callerArn: string;

  constructor(options: {
    readonly endpoint: string;
    readonly stack: DeployedStack;
    readonly bundles: Readonly<Record<string, string>>;
    readonly credentials: Readonly<Record<string, AccountCredentials>>;
    readonly decisions: IamDecisions;
    readonly callerArn: string;
  }) {
    this.stack = options.stack;
    this.#endpoint = options.endpoint;
    this.#bundles = options.bundles;
    this.#credentials = options.credentials;
    this.#decisions = options.decisions;
    this.callerArn = options.callerArn;
  }

  /** The functions invoked so far and how often. */
  invoked(): Record<string, number> {
    return Object.fromEntries([...this.#containers].map(([id, c]) => [id, c.invocations]));
  }

  container(id: string): LambdaContainer {
    let container = this.#containers.get(id);
    if (container === undefined) {
      const fn = this.stack.functions[id];
      const bundle = this.#bundles[id];
      const credentials = this.#credentials[id];
      if (fn === undefined || bundle === undefined || credentials === undefined) {
        throw new Error(`${id}: not deployed, not bundled or its role not assumed`);
      }
      container = new LambdaContainer(fn, bundle, this.#endpoint, credentials);
      this.#containers.set(id, container);
    }
    return container;
  }

  /**
   * Invoke and fail loudly: an error, an ERROR log line (the functions log and
   * swallow some failures, e.g. an enqueue the reconciler retries), or a call
   * moto denied meanwhile names the function and the call.
   */
  async invoke(id: string, event: unknown, options: { expectedErrorLog?: RegExp } = {}): Promise<unknown> {
    const mark = this.#decisions.mark();
    const container = this.container(id);
    const offset = container.outputLength;
    const outcome: Invocation = await container.invoke(event);
    const denials = this.#decisions.denialsSince(mark);
    const expected = options.expectedErrorLog;
    const logged = container
      .errorsSince(offset)
      .filter((line) => expected === undefined || !expected.test(line));
    if (outcome.error !== undefined || denials.length > 0 || logged.length > 0) {
      const said =
        outcome.error === undefined ? 'returned' : `failed: ${outcome.error.name}: ${outcome.error.message}`;
      throw new PathStepError(
        [
          `${id} ${said}`,
          ...(denials.length > 0 ? [`denied meanwhile:\n${describeDenials(denials)}`] : []),
          ...(logged.length > 0 ? [`it logged errors:\n${logged.join('\n').slice(0, 2000)}`] : []),
          ...(outcome.error?.body === undefined
            ? []
            : [`its last AWS answer: ${outcome.error.body.slice(0, 400)}`]),
          `its output:\n${this.container(id).output().slice(-3000)}`,
        ].join('\n'),
      );
    }
    return outcome.result;
  }

  /** API Gateway HTTP API → the route's function (payload format 2.0, IAM authorizer context). */
  async api(
    routeKey: keyof typeof API_HANDLERS,
    path: string,
    options: { pathParameters?: Record<string, string>; body?: unknown } = {},
  ): Promise<ApiAnswer> {
    const [method = 'GET'] = routeKey.split(' ');
    const event = {
      version: '2.0',
      routeKey,
      rawPath: path,
      rawQueryString: '',
      headers: options.body === undefined ? {} : { 'content-type': 'application/json' },
      requestContext: {
        accountId: this.callerArn.split(':')[4],
        apiId: 'deployed-stack',
        domainName: 'deployed-stack.execute-api.eu-west-1.amazonaws.com',
        domainPrefix: 'deployed-stack',
        http: {
          method,
          path,
          protocol: 'HTTP/1.1',
          sourceIp: '203.0.113.7',
          userAgent: 'deployed-stack-test',
        },
        requestId: randomUUID(),
        routeKey,
        stage: '$default',
        time: new Date().toUTCString(),
        timeEpoch: Date.now(),
        authorizer: { iam: { userArn: this.callerArn } },
      },
      isBase64Encoded: false,
      ...(options.pathParameters === undefined ? {} : { pathParameters: options.pathParameters }),
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    };
    const answer = (await this.invoke(constructIdOf(API_HANDLERS[routeKey].entry), event)) as {
      statusCode: number;
      body?: string;
    };
    return {
      statusCode: answer.statusCode,
      body: answer.body === undefined ? undefined : JSON.parse(answer.body),
    };
  }

  #sqsAs(id: string): SQSClient {
    let client = this.#sqs.get(id);
    if (client === undefined) {
      const credentials = this.#credentials[id];
      if (credentials === undefined) throw new Error(`${id}: role not assumed`);
      // An explicit endpoint: the stack's queue URLs name AWS's host, which the SDK would otherwise call.
      client = new SQSClient(awsConfig(this.#endpoint, credentials));
      this.#sqs.set(id, client);
    }
    return client;
  }

  /** The URL of a queue named by its ARN (the event source mapping's EventSourceArn). */
  async queueUrlOf(queueArn: string, asFunction: string): Promise<string> {
    const [, , , , account, name] = queueArn.split(':');
    const { QueueUrl } = await this.#sqsAs(asFunction).send(
      new GetQueueUrlCommand({ QueueName: name, QueueOwnerAWSAccountId: account }),
    );
    return QueueUrl ?? '';
  }

  /** Receive as the event source mapping does, with the function's role. */
  async receive(
    id: string,
    queueUrl: string,
    options: { visibilityTimeout?: number; waitSeconds?: number } = {},
  ) {
    const mark = this.#decisions.mark();
    try {
      const { Messages = [] } = await this.#sqsAs(id).send(
        new ReceiveMessageCommand({
          QueueUrl: queueUrl,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: options.waitSeconds ?? 1,
          MessageSystemAttributeNames: ['All'],
          ...(options.visibilityTimeout === undefined
            ? {}
            : { VisibilityTimeout: options.visibilityTimeout }),
        }),
      );
      return Messages;
    } catch (error) {
      throw new PathStepError(
        `${id}'s event source mapping could not receive from ${queueUrl}: ${(error as Error).message}\n${describeDenials(this.#decisions.denialsSince(mark))}`,
      );
    }
  }

  /**
   * One poll of the SQS event source mapping of `id` on `queueUrl`: receive,
   * invoke with the batch, delete what the function did not report failed.
   * Returns the messages handed over and the batch response.
   */
  async deliverFromQueue(
    id: string,
    queueUrl: string,
    queueArn: string,
    options: { expectedErrorLog?: RegExp } = {},
  ): Promise<{ messages: Message[]; failures: string[] }> {
    const messages = await this.receive(id, queueUrl);
    if (messages.length === 0) return { messages, failures: [] };
    const response = (await this.invoke(id, sqsEvent(messages, { queueArn }), options)) as {
      batchItemFailures?: { itemIdentifier: string }[];
    };
    const failures = (response?.batchItemFailures ?? []).map((f) => f.itemIdentifier);
    const done = messages.filter((m) => !failures.includes(m.MessageId ?? ''));
    if (done.length > 0) {
      const mark = this.#decisions.mark();
      try {
        await this.#sqsAs(id).send(
          new DeleteMessageBatchCommand({
            QueueUrl: queueUrl,
            Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle ?? '' })),
          }),
        );
      } catch (error) {
        throw new PathStepError(
          `${id}'s event source mapping could not delete: ${(error as Error).message}\n${describeDenials(this.#decisions.denialsSince(mark))}`,
        );
      }
    }
    return { messages, failures };
  }

  /** An EventBridge schedule's event. */
  scheduled(ruleArn: string): ScheduledEvent {
    return {
      version: '0',
      id: randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: this.callerArn.split(':')[4] ?? '',
      time: new Date().toISOString(),
      region: REGION,
      resources: [ruleArn],
      detail: {},
    };
  }

  async stop(): Promise<void> {
    await Promise.all([...this.#containers.values()].map((c) => c.stop()));
    for (const client of this.#sqs.values()) client.destroy();
  }
}
