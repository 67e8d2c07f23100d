import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ecsTaskStateChangePattern } from '../../functions/status-sync/ecs-task-state-change.ts';

export interface RunEventsProps {
  readonly clusterArn: string;
  readonly statusSync: IFunction;
  readonly reconciler: IFunction;
  readonly reconcileEvery: Duration;
  /** Polls ACI, Cloud Run and Kubernetes runs (no push events); started every minute, sweeps for most of it. */
  readonly poller: IFunction;
  /** Where EventBridge puts an event it could not deliver after its retries. */
  readonly deadLetterQueue: IQueue;
}

/**
 * - "ECS Task State Change" events of this cluster's runner tasks → status sync
 *   (the pattern is the handler's own, so the two cannot disagree).
 * - A schedule → the reconciler.
 * - A one-minute schedule → the backend poller, which sweeps every
 *   `poll_interval_seconds` within its invocation.
 * What EventBridge cannot deliver ends in the events DLQ (which alarms).
 */
export class RunEvents extends Construct {
  readonly taskStateRule: Rule;
  readonly reconcileSchedule: Rule;
  readonly pollSchedule: Rule;

  constructor(scope: Construct, id: string, props: RunEventsProps) {
    super(scope, id);
    const target = (fn: IFunction, maxEventAge: Duration, retryAttempts: number) =>
      new LambdaFunction(fn, { deadLetterQueue: props.deadLetterQueue, retryAttempts, maxEventAge });
    this.taskStateRule = new Rule(this, 'EcsTaskStateChange', {
      description: 'ECS task state changes of the Remote Worker runner cluster → status sync',
      eventPattern: ecsTaskStateChangePattern(props.clusterArn),
      // A task event is never sent again: keep trying for two hours.
      targets: [target(props.statusSync, Duration.hours(2), 185)],
    });
    this.reconcileSchedule = new Rule(this, 'ReconcileSchedule', {
      description: 'Runs the Remote Worker reconciler',
      schedule: Schedule.rate(props.reconcileEvery),
      // A missed tick is made up by the next one; retry briefly only.
      targets: [target(props.reconciler, Duration.minutes(5), 2)],
    });
    this.pollSchedule = new Rule(this, 'PollSchedule', {
      description: 'Runs the Remote Worker backend poller (ACI, Cloud Run, Kubernetes)',
      schedule: Schedule.rate(Duration.minutes(1)),
      // The next tick replaces a lost one within a minute: no retries.
      targets: [target(props.poller, Duration.minutes(1), 0)],
    });
  }
}
