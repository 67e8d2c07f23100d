import {
  Annotations,
  Aws,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Stack,
  type StackProps,
  Tags,
} from 'aws-cdk-lib';
import { type IVpc, Vpc } from 'aws-cdk-lib/aws-ec2';
import { PolicyDocument, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { relayPolicyDocument } from '../../runners/relay/policy.ts';
import type { EnvironmentConfig } from '../config.ts';
import { ControlPlaneAlarms } from '../constructs/alarms.ts';
import { AssetStorage } from '../constructs/asset-storage.ts';
import type { ConsoleSite } from '../constructs/console-site.ts';
import { ControlPlaneApi } from '../constructs/control-plane-api.ts';
import {
  DiscoverySchedule,
  discoveryRefreshRate,
  grantDiscoveryListing,
} from '../constructs/discovery-schedule.ts';
import { HandlerFunction } from '../constructs/handler-function.ts';
import { RelayIdentity } from '../constructs/relay-identity.ts';
import { RunEvents } from '../constructs/run-events.ts';
import { RunTable } from '../constructs/run-table.ts';
import { RunnerImageAssets } from '../constructs/runner-images.ts';
import {
  RUNNER_CONTAINER_NAME,
  RUNNER_IMAGE_SETTINGS,
  RUNNER_LOG_STREAM_PREFIX,
  type RunnerImageSetting,
  Runners,
  secretArnsUnder,
} from '../constructs/runners.ts';
import { WorkQueues } from '../constructs/work-queues.ts';
import {
  environmentSizeProblem,
  functionEnvironment,
  METRIC_NAMESPACE,
  runSecretsPrefix,
} from '../function-environment.ts';
import {
  type Access,
  API_HANDLERS,
  constructIdOf,
  DEAD_LETTER_TIMEOUT_SECONDS,
  DISPATCHER_TIMEOUT_SECONDS,
  type HandlerSpec,
  WORKER_HANDLERS,
} from '../handlers.ts';
import { consoleSiteFor } from './console.ts';

export interface ControlPlaneStackProps extends StackProps {
  readonly config: EnvironmentConfig;
  /** Absolute path of the repository root (where package-lock.json is). */
  readonly projectRoot: string;
}

/** How long the relay hides a message it received; it renews the timeout while the run executes. */
const RELAY_VISIBILITY = Duration.minutes(2);
const RECONCILE_EVERY = Duration.minutes(1);

/**
 * The whole control plane of one environment: API, functions, queues, table,
 * asset bucket, ECS runners, events, the relay's identity and alarms.
 */
export class ControlPlaneStack extends Stack {
  readonly config: EnvironmentConfig;
  /** The existing VPC of the runner subnets, imported from context. */
  readonly vpc: IVpc;
  readonly table: RunTable;
  readonly queues: WorkQueues;
  readonly assets: AssetStorage;
  readonly runners: Runners;
  /** The runner images built from runners/ (the image settings left unset); undefined when every one is set. */
  readonly runnerImages: RunnerImageAssets | undefined;
  readonly api: ControlPlaneApi;
  readonly events: RunEvents;
  readonly relay: RelayIdentity;
  readonly alarms: ControlPlaneAlarms;
  /** The scheduled refresh of discovered cloud VMs; only with discovery_clouds (and a refresh interval). */
  readonly discovery: DiscoverySchedule | undefined;
  /** The web console's static site; only with `console` (and `jwt`) in the environment. */
  readonly console: ConsoleSite | undefined;
  /** Every handler function by construct id (`SubmitRun`, `DispatchRuns` …). */
  readonly functions: Readonly<Record<string, HandlerFunction>>;
  /** What each of `functions` was granted. */
  readonly access: Readonly<Record<string, ReadonlySet<Access>>>;

  constructor(scope: Construct, id: string, props: ControlPlaneStackProps) {
    super(scope, id, props);
    const config = props.config;
    this.config = config;
    Tags.of(this).add('application', 'remote-worker');
    Tags.of(this).add('environment', config.name);

    const removalPolicy = config.isDev ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN;
    const logRetention = config.logRetentionDays as RetentionDays;
    const namePrefix = `remote-worker-${config.name}`;

    // Imported from context rather than looked up, so synth needs no credentials or network.
    const vpc = Vpc.fromVpcAttributes(this, 'Vpc', {
      vpcId: config.network.vpcId,
      availabilityZones: config.network.availabilityZones,
      privateSubnetIds: config.network.runnerSubnetIds,
    });
    this.vpc = vpc;

    this.table = new RunTable(this, 'Runs', { protect: !config.isDev, removalPolicy });
    this.queues = new WorkQueues(this, 'Queues', {
      dispatcherTimeout: Duration.seconds(DISPATCHER_TIMEOUT_SECONDS),
      deadLetterTimeout: Duration.seconds(DEAD_LETTER_TIMEOUT_SECONDS),
      relayVisibilityTimeout: RELAY_VISIBILITY,
      maxReceiveCount: config.parsedSettings.dispatch_max_receive_count,
      removalPolicy,
    });
    this.assets = new AssetStorage(this, 'Assets', { removalPolicy });
    const images = {
      ansible_local_image: config.parsedSettings.ansible_local_image,
      ansible_cloud_image: config.parsedSettings.ansible_cloud_image,
      k8s_runner_image: config.parsedSettings.k8s_runner_image,
    };
    // An image setting the operator left unset is built from runners/ by `cdk deploy`; a set one is pulled as named.
    const unset = RUNNER_IMAGE_SETTINGS.filter((setting) => config.rawSettings[setting] === undefined);
    this.runnerImages =
      unset.length === 0
        ? undefined
        : new RunnerImageAssets(this, 'RunnerImages', {
            settings: unset,
            projectRoot: props.projectRoot,
            architecture: config.runnerTask.architecture,
          });
    const perRunFamilyPrefix = `${namePrefix}-run-`;
    this.runners = new Runners(this, 'Runners', {
      vpc,
      namePrefix,
      images,
      ...(this.runnerImages === undefined ? {} : { builtImages: this.runnerImages.images }),
      perRunFamilyPrefix,
      secretsPrefix: config.secretsPrefix,
      ...(config.registryCredentialsSecretName === undefined
        ? {}
        : { registryCredentialsSecretName: config.registryCredentialsSecretName }),
      cpu: config.runnerTask.cpu,
      memoryMiB: config.runnerTask.memoryMiB,
      architecture: config.runnerTask.architecture,
      logRetention,
      removalPolicy,
    });

    const environment = functionEnvironment({
      config,
      tableName: this.table.table.tableName,
      dispatchQueueUrl: this.queues.dispatch.queueUrl,
      relayQueueUrl: this.queues.relay.queueUrl,
      assetBucket: this.assets.bucket.bucketName,
      runLogGroup: this.runners.logGroup.logGroupName,
      cluster: this.runners.cluster.clusterName,
      executionRoleArn: this.runners.executionRole.roleArn,
      taskDefinitions: familiesByImage(images, this.runners),
      containerName: RUNNER_CONTAINER_NAME,
      logStreamPrefix: RUNNER_LOG_STREAM_PREFIX,
      perRunFamilyPrefix,
    });
    // Lambda checks its 4 KB only at deploy, function by function: say it at synth, naming what to shorten.
    const sizeProblem = environmentSizeProblem(
      environment,
      `cdk.json's environments.${config.name}.settings`,
    );
    if (sizeProblem?.level === 'error') this.node.addValidation({ validate: () => [sizeProblem.message] });
    if (sizeProblem?.level === 'warning') {
      Annotations.of(this).addWarningV2('@remote-worker/lambda-environment-size', sizeProblem.message);
    }

    const functions: Record<string, HandlerFunction> = {};
    const accessByFunction: Record<string, Set<Access>> = {};
    const make = (spec: HandlerSpec): HandlerFunction => {
      const name = constructIdOf(spec.entry);
      const existing = functions[name];
      if (existing !== undefined) return existing;
      const fn = new HandlerFunction(this, name, {
        entry: spec.entry,
        description: `Remote Worker ${config.name}: ${spec.description}`,
        timeout: Duration.seconds(spec.timeoutSeconds ?? 10),
        ...(spec.memoryMiB === undefined ? {} : { memorySize: spec.memoryMiB }),
        environment,
        logRetention,
        removalPolicy,
        projectRoot: props.projectRoot,
        ...(spec.controlsTasks === true ? { controlsTasks: true } : {}),
        ...(spec.discoversVms === true ? { discoversVms: true } : {}),
      });
      const access = new Set(spec.access);
      for (const a of access) this.grant(fn, a);
      functions[name] = fn;
      accessByFunction[name] = access;
      return fn;
    };

    const routes = Object.entries(API_HANDLERS).map(([routeKey, spec]) => {
      const fn = make(spec);
      return { routeKey, handler: fn.fn, name: constructIdOf(spec.entry) };
    });
    const dispatcher = make(WORKER_HANDLERS.DispatchRuns);
    const settle = make(WORKER_HANDLERS.SettleDeadLetters);
    const statusSync = make(WORKER_HANDLERS.EcsTaskStateChange);
    const reconciler = make(WORKER_HANDLERS.ReconcileRuns);
    const poller = make(WORKER_HANDLERS.PollBackends);
    const discoveryRate = discoveryRefreshRate(config.parsedSettings);
    const discoveryRefresh =
      discoveryRate === undefined ? undefined : make(WORKER_HANDLERS.RefreshDiscoverySchedule);
    this.functions = functions;
    this.access = accessByFunction;

    this.api = new ControlPlaneApi(this, 'Api', {
      routes,
      ...(config.jwt === undefined ? {} : { jwt: config.jwt }),
      rateLimit: config.api.rateLimit,
      burstLimit: config.api.burstLimit,
      logRetention,
      removalPolicy,
    });

    this.console = consoleSiteFor(this, config, {
      projectRoot: props.projectRoot,
      api: this.api,
      accessLogs: this.assets.accessLogs as IBucket,
      logRetention,
      removalPolicy,
    });

    dispatcher.fn.addEventSource(
      new SqsEventSource(this.queues.dispatch, {
        batchSize: 10,
        maxBatchingWindow: Duration.seconds(1),
        reportBatchItemFailures: true,
        // Caps concurrent RunTask callers well below ECS's API rate limits.
        maxConcurrency: 10,
      }),
    );
    for (const dlq of [this.queues.dispatchDlq, this.queues.relayDlq]) {
      settle.fn.addEventSource(new SqsEventSource(dlq, { batchSize: 10, reportBatchItemFailures: true }));
    }

    // An event whose handling keeps failing (Lambda's own async retries included) ends in the events DLQ.
    for (const fn of [statusSync, reconciler]) {
      fn.fn.configureAsyncInvoke({
        retryAttempts: 2,
        maxEventAge: Duration.hours(6),
        onFailure: new SqsDestination(this.queues.eventsDlq),
      });
    }
    this.events = new RunEvents(this, 'Events', {
      clusterArn: this.runners.cluster.clusterArn,
      statusSync: statusSync.fn,
      reconciler: reconciler.fn,
      reconcileEvery: RECONCILE_EVERY,
      poller: poller.fn,
      deadLetterQueue: this.queues.eventsDlq,
    });

    this.discovery =
      discoveryRefresh === undefined || discoveryRate === undefined
        ? undefined
        : new DiscoverySchedule(this, 'DiscoverySchedule', {
            refresh: discoveryRefresh.fn,
            every: discoveryRate,
            deadLetterQueue: this.queues.eventsDlq,
          });

    this.relay = new RelayIdentity(this, 'Relay', {
      relay: config.relay,
      profileName: `${namePrefix}-relay`,
      // The relay agent's own least-privilege document (runners/relay/policy.ts), so code and role agree.
      policy: PolicyDocument.fromJson(
        relayPolicyDocument({
          queueArn: this.queues.relay.queueArn,
          tableArn: this.table.table.tableArn,
          ...(config.relay.readSecrets
            ? {
                secrets: {
                  partition: Aws.PARTITION,
                  region: this.region,
                  account: this.account,
                  namePrefix: config.secretsPrefix,
                },
              }
            : {}),
        }),
      ),
    });

    this.outputs({
      ApiUrl: [this.api.stage.url, 'Base URL of the REST API (v1)'],
      RunsTableName: [this.table.table.tableName, 'RUNS_TABLE of the relay agent'],
      RelayQueueUrl: [this.queues.relay.queueUrl, 'RELAY_QUEUE_URL of the relay agent'],
      RelayRoleArn: [this.relay.role.roleArn, 'The role the relay agent assumes'],
      ...(this.relay.rolesAnywhereProfile === undefined
        ? {}
        : {
            RelayRolesAnywhereProfileArn: [
              this.relay.rolesAnywhereProfile.attrProfileArn,
              'The IAM Roles Anywhere profile for the relay host (aws_signing_helper --profile-arn)',
            ],
          }),
      AssetBucketName: [this.assets.bucket.bucketName, 'Bucket of POST /assets and the runs it serves'],
      RunLogGroupName: [this.runners.logGroup.logGroupName, 'Log group of the ECS runner tasks'],
      RunnerClusterName: [this.runners.cluster.clusterName, 'ECS cluster of the runner tasks'],
      ...(this.console === undefined
        ? {}
        : {
            ConsoleUrl: [
              `${this.console.origin}/`,
              "The web console; register it as the OIDC client's sign-in redirect URI",
            ],
          }),
    });

    this.alarms = new ControlPlaneAlarms(this, 'Alarms', {
      email: config.alarmEmail,
      metricNamespace: METRIC_NAMESPACE,
      deadLetterQueues: {
        DispatchDlq: this.queues.dispatchDlq,
        RelayDlq: this.queues.relayDlq,
        EventsDlq: this.queues.eventsDlq,
      },
      dispatchQueue: this.queues.dispatch,
      dispatcher: dispatcher.fn,
      functions: Object.fromEntries(
        Object.entries(functions)
          .filter(([, f]) => f !== dispatcher)
          .map(([name, f]) => [name, f.fn]),
      ),
      reconcilerLogs: reconciler.logGroup,
      removalPolicy,
    });
  }

  private outputs(values: Record<string, [value: string, description: string]>): void {
    for (const [id, [value, description]] of Object.entries(values)) {
      new CfnOutput(this, id, { value, description });
    }
  }

  /** One grant per kind of access; `Record<Access, …>` makes a new kind fail to compile until it is granted here. */
  private grant(fn: HandlerFunction, access: Access): void {
    const allow = (actions: string[], resource: string) =>
      fn.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources: [resource] }));
    const grants: Record<Access, () => void> = {
      'table:read': () => this.table.grantRead(fn),
      'table:write': () => this.table.grantWrite(fn),
      'dispatch:send': () => this.queues.dispatch.grantSendMessages(fn),
      'relay:send': () => this.queues.relay.grantSendMessages(fn),
      'assets:read': () => this.assets.grantRead(fn),
      'assets:write': () => this.assets.grantWrite(fn),
      'run-logs:read': () => allow(['logs:GetLogEvents'], this.runners.logGroup.logGroupArn),
      'discovery:list': () => grantDiscoveryListing(fn, this.config.parsedSettings, this.region),
      'ecs:launch': () => this.runners.grantLaunch(fn),
      'ecs:observe': () => this.runners.grantObserve(fn),
      'ecs:cleanup': () => this.runners.grantCleanup(fn),
      'ecs:stop': () => this.runners.grantStop(fn),
      'secrets:describe': () =>
        allow(['secretsmanager:DescribeSecret'], secretArnsUnder(this, this.config.secretsPrefix)),
      'secrets:run-values': () =>
        allow(
          [
            'secretsmanager:CreateSecret',
            'secretsmanager:PutSecretValue',
            'secretsmanager:DeleteSecret',
            'secretsmanager:TagResource',
          ],
          secretArnsUnder(this, runSecretsPrefix(this.config.secretsPrefix)),
        ),
      'secrets:read': () =>
        allow(['secretsmanager:GetSecretValue'], secretArnsUnder(this, this.config.secretsPrefix)),
    };
    grants[access]();
  }
}

/** Runner image → task definition family; two settings naming one image share the first one's definition. */
function familiesByImage(
  images: Readonly<Record<RunnerImageSetting, string>>,
  runners: Runners,
): Record<string, string> {
  const families: Record<string, string> = {};
  for (const setting of RUNNER_IMAGE_SETTINGS) {
    families[images[setting]] ??= runners.taskDefinitions[setting].family;
  }
  return families;
}
