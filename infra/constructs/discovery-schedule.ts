import { Duration } from 'aws-cdk-lib';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEFAULT_DISCOVERY_REFRESH_SECONDS } from '../../shared/config/settings/discovery.ts';
import type { Settings } from '../../shared/config/settings.ts';

type DiscoverySettings = Pick<
  Settings,
  'discovery_clouds' | 'discovery_aws_regions' | 'discovery_refresh_seconds'
>;

/**
 * How often the scheduled refresh runs: `discovery_refresh_seconds` (unset:
 * 900) rounded up to whole minutes, EventBridge's finest rate; undefined —
 * no schedule — when `discovery_clouds` names no cloud or the setting is 0
 * (refreshed on POST /discovery/refresh only).
 */
export function discoveryRefreshRate(settings: DiscoverySettings): Duration | undefined {
  if ((settings.discovery_clouds ?? []).length === 0) return undefined;
  const seconds = settings.discovery_refresh_seconds ?? DEFAULT_DISCOVERY_REFRESH_SECONDS;
  return seconds === 0 ? undefined : Duration.minutes(Math.max(1, Math.ceil(seconds / 60)));
}

/**
 * The regions EC2 discovery lists (`discovery_aws_regions`, else the stack's
 * region, as the functions' AWS_REGION is), or undefined when
 * `discovery_clouds` does not name aws.
 */
export function ec2DiscoveryRegions(settings: DiscoverySettings, stackRegion: string): string[] | undefined {
  if (!(settings.discovery_clouds ?? []).includes('aws')) return undefined;
  return settings.discovery_aws_regions ?? [stackRegion];
}

/**
 * What listing the clouds needs from IAM: `ec2:DescribeInstances`, which
 * supports no resource-level permissions, held to the discovery regions by
 * `aws:RequestedRegion`; nothing when aws is not listed (Azure and GCP are
 * reached with their own credentials).
 */
export function grantDiscoveryListing(
  grantee: IGrantable,
  settings: DiscoverySettings,
  stackRegion: string,
): void {
  const regions = ec2DiscoveryRegions(settings, stackRegion);
  if (regions === undefined) return;
  grantee.grantPrincipal.addToPrincipalPolicy(
    new PolicyStatement({
      actions: ['ec2:DescribeInstances'],
      resources: ['*'],
      conditions: { StringEquals: { 'aws:RequestedRegion': regions } },
    }),
  );
}

export interface DiscoveryScheduleProps {
  /** functions/discovery/refresh-discovery-schedule.ts */
  readonly refresh: IFunction;
  readonly every: Duration;
  /** Where EventBridge puts an invocation it could not deliver after its retries. */
  readonly deadLetterQueue: IQueue;
}

/**
 * The scheduled refresh of discovered cloud VMs: an EventBridge rule every
 * `discovery_refresh_seconds` invoking the refresh function, which writes
 * each cloud's list to the runs table that GET /discovery, submit and
 * dispatch read. A missed tick is made up by the next one, so retries are
 * brief; what cannot be delivered ends in the events DLQ (which alarms).
 */
export class DiscoverySchedule extends Construct {
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: DiscoveryScheduleProps) {
    super(scope, id);
    this.rule = new Rule(this, 'Rule', {
      description: 'Refreshes the Remote Worker discovered cloud VMs',
      schedule: Schedule.rate(props.every),
      targets: [
        new LambdaFunction(props.refresh, {
          deadLetterQueue: props.deadLetterQueue,
          retryAttempts: 2,
          maxEventAge: Duration.minutes(Math.min(props.every.toMinutes(), 60)),
        }),
      ],
    });
  }
}
