import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface WorkQueuesProps {
  /** The dispatcher's Lambda timeout; the dispatch queue hides a message for six times that. */
  readonly dispatcherTimeout: Duration;
  /** The dead-letter handler's Lambda timeout; the DLQs it consumes hide a message for six times that. */
  readonly deadLetterTimeout: Duration;
  /** How long a relay message stays hidden after a receive; the relay renews it while its run executes. */
  readonly relayVisibilityTimeout: Duration;
  /** Receives before a message moves to its DLQ (the `dispatch_max_receive_count` setting). */
  readonly maxReceiveCount: number;
  readonly removalPolicy: RemovalPolicy;
}

/** AWS guidance for Lambda event sources: visibility ≥ 6 × function timeout, so retries never overlap. */
export const VISIBILITY_PER_TIMEOUT = 6;

const DLQ_RETENTION = Duration.days(14);

/**
 * The dispatch queue and the relay queue, each with its own DLQ, plus the DLQ
 * EventBridge uses when it cannot deliver an ECS event to the status sync.
 * Every queue: SSE-SQS encryption (no KMS key to grant to EventBridge or the
 * relay), SSL-only policy, 14 days' retention on the DLQs.
 */
export class WorkQueues extends Construct {
  readonly dispatch: Queue;
  readonly dispatchDlq: Queue;
  readonly relay: Queue;
  readonly relayDlq: Queue;
  readonly eventsDlq: Queue;

  constructor(scope: Construct, id: string, props: WorkQueuesProps) {
    super(scope, id);
    const common = {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: props.removalPolicy,
    };
    const dlq = (name: string) =>
      new Queue(this, name, {
        ...common,
        retentionPeriod: DLQ_RETENTION,
        visibilityTimeout: Duration.seconds(props.deadLetterTimeout.toSeconds() * VISIBILITY_PER_TIMEOUT),
      });

    this.dispatchDlq = dlq('DispatchDlq');
    this.dispatch = new Queue(this, 'Dispatch', {
      ...common,
      visibilityTimeout: Duration.seconds(props.dispatcherTimeout.toSeconds() * VISIBILITY_PER_TIMEOUT),
      deadLetterQueue: { queue: this.dispatchDlq, maxReceiveCount: props.maxReceiveCount },
    });

    this.relayDlq = dlq('RelayDlq');
    this.relay = new Queue(this, 'Relay', {
      ...common,
      visibilityTimeout: props.relayVisibilityTimeout,
      deadLetterQueue: { queue: this.relayDlq, maxReceiveCount: props.maxReceiveCount },
    });

    this.eventsDlq = dlq('EventsDlq');
  }
}
