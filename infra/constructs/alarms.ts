import { Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, type IMetric, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

export interface ControlPlaneAlarmsProps {
  readonly email: string;
  /** Namespace of the metrics this stack derives from logs. */
  readonly metricNamespace: string;
  readonly deadLetterQueues: Readonly<Record<string, IQueue>>;
  readonly dispatchQueue: IQueue;
  readonly dispatcher: IFunction;
  /** Every function whose errors page someone, by name. */
  readonly functions: Readonly<Record<string, IFunction>>;
  readonly reconcilerLogs: ILogGroup;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * Log lines of the reconciler (shared/app/reconcile.ts, shared/app/sync-backends.ts)
 * that mean it found something the happy path missed: a lost message re-sent,
 * a run timed out, or a run settled from the backend instead of its event.
 */
export const RECONCILER_FINDINGS = ['reconciled runs', 'synced runs with their backends'] as const;

/**
 * Alarms that mean a run may be stuck or lost, e-mailed through an SNS topic
 * encrypted with its own key (CloudWatch must be allowed to use it, which an
 * AWS-managed key does not permit):
 * - any message in a dead-letter queue;
 * - dispatcher errors, and the dispatch queue's oldest message ageing past 15 minutes;
 * - errors of every other function;
 * - reconciler findings (from its log lines; see RECONCILER_FINDINGS).
 */
export class ControlPlaneAlarms extends Construct {
  readonly topic: Topic;
  readonly alarms: Alarm[] = [];

  constructor(scope: Construct, id: string, props: ControlPlaneAlarmsProps) {
    super(scope, id);
    const key = new Key(this, 'TopicKey', {
      description: 'Encrypts the Remote Worker alarm topic',
      enableKeyRotation: true,
      removalPolicy: props.removalPolicy,
    });
    key.addToResourcePolicy(
      new PolicyStatement({
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    );
    this.topic = new Topic(this, 'Topic', {
      displayName: 'Remote Worker alarms',
      masterKey: key,
      enforceSSL: true,
    });
    this.topic.addSubscription(new EmailSubscription(props.email));
    const action = new SnsAction(this.topic);

    const alarm = (name: string, metric: IMetric, description: string, threshold = 1) => {
      const a = new Alarm(this, name, {
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      a.addAlarmAction(action);
      a.addOkAction(action);
      this.alarms.push(a);
      return a;
    };

    for (const [name, queue] of Object.entries(props.deadLetterQueues)) {
      alarm(
        `${name}Depth`,
        queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1), statistic: 'Maximum' }),
        `Messages in the ${name} dead-letter queue: their runs could not be delivered`,
      );
    }
    alarm(
      'DispatcherErrors',
      props.dispatcher.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
      'The dispatcher failed invocations (not single records): runs may wait in the dispatch queue',
    );
    alarm(
      'DispatchBacklog',
      props.dispatchQueue.metricApproximateAgeOfOldestMessage({
        period: Duration.minutes(5),
        statistic: 'Maximum',
      }),
      'The oldest message in the dispatch queue is older than 15 minutes',
      15 * 60,
    );
    for (const [name, fn] of Object.entries(props.functions)) {
      alarm(
        `${name}Errors`,
        fn.metricErrors({ period: Duration.minutes(5), statistic: 'Sum' }),
        `The ${name} function failed invocations`,
      );
    }

    const findings = new MetricFilter(this, 'ReconcilerFindingsFilter', {
      logGroup: props.reconcilerLogs,
      metricNamespace: props.metricNamespace,
      metricName: 'ReconcilerFindings',
      filterPattern: FilterPattern.any(
        ...RECONCILER_FINDINGS.map((message) => FilterPattern.stringValue('$.message', '=', message)),
      ),
      metricValue: '1',
    });
    alarm(
      'ReconcilerFindings',
      findings.metric({ period: Duration.minutes(15), statistic: 'Sum' }),
      'The reconciler re-sent lost messages, timed runs out or settled runs whose events were missed',
    );
  }
}
