import { ArnFormat, Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { IVpc } from 'aws-cdk-lib/aws-ec2';
import { type IRepository, Repository } from 'aws-cdk-lib/aws-ecr';
import {
  Cluster,
  ContainerImage,
  ContainerInsights,
  CpuArchitecture,
  FargateTaskDefinition,
  LogDrivers,
  OperatingSystemFamily,
} from 'aws-cdk-lib/aws-ecs';
import { type IGrantable, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { type ISecret, Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { runSecretsPrefix } from '../function-environment.ts';

/** The runner image settings, in the order their task definitions are created. */
export const RUNNER_IMAGE_SETTINGS = [
  'ansible_local_image',
  'ansible_cloud_image',
  'k8s_runner_image',
] as const;
export type RunnerImageSetting = (typeof RUNNER_IMAGE_SETTINGS)[number];

/** The task definition family of one runner image setting: `remote-worker-dev-ansible-local`. */
export const taskFamilyOf = (namePrefix: string, setting: RunnerImageSetting): string =>
  `${namePrefix}-${setting.replace(/_image$/, '').replaceAll('_', '-')}`;

/** The container every runner task definition runs the image in; the ECS launcher overrides it by this name. */
export const RUNNER_CONTAINER_NAME = 'runner';
/** awslogs writes `<prefix>/<container>/<task id>`; the CloudWatch log reader builds the same name. */
export const RUNNER_LOG_STREAM_PREFIX = 'run';

export interface RunnersProps {
  readonly vpc: IVpc;
  /** Short, environment-unique name prefix for the task definition families (`remote-worker-prod`). */
  readonly namePrefix: string;
  readonly images: Readonly<Record<RunnerImageSetting, string>>;
  /**
   * Images the stack builds itself (RunnerImageAssets), used instead of the
   * setting's registry image; the setting's value stays the key the
   * dispatcher finds the task definition by.
   */
  readonly builtImages?: Readonly<Partial<Record<RunnerImageSetting, ContainerImage>>>;
  /** Family prefix of the per-run task definitions the ECS launcher registers for runs with secrets. */
  readonly perRunFamilyPrefix: string;
  /** Secrets Manager name prefix of the secrets runs may bind ("Use a secret"). */
  readonly secretsPrefix: string;
  readonly registryCredentialsSecretName?: string;
  readonly cpu: number;
  readonly memoryMiB: number;
  readonly architecture: 'x86_64' | 'arm64';
  readonly logRetention: RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

const MAX_STOP_TIMEOUT = Duration.seconds(120);

/** `<account>.dkr.ecr.<region>.amazonaws.com/<repository>[:tag | @sha256:…]` */
const ECR_IMAGE =
  /^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?\/([^:@]+)(?::([^@]+))?(?:@(sha256:[0-9a-f]{64}))?$/;

/**
 * The ECS side of the `ecs` runner: a Fargate cluster with Container Insights,
 * one task definition per runner image setting, the runs' log group, and two
 * roles:
 * - the execution role ECS itself uses: write this log group, pull the runner
 *   images (their ECR repositories, or a registry-credentials secret), and read
 *   the secrets under the bindable prefix that per-run task definitions name;
 * - the task role the runner container gets: only GetSecretValue on the
 *   per-run secrets prefix (`<secretsPrefix>runs/`), which the task shim reads
 *   itself (RW_SECRET_REFS: values minted at launch or submitted with the
 *   run); it fetches assets by URL and gets stored secrets as environment
 *   from ECS.
 */
export class Runners extends Construct {
  readonly cluster: Cluster;
  readonly logGroup: LogGroup;
  readonly executionRole: Role;
  readonly taskRole: Role;
  readonly taskDefinitions: Readonly<Record<RunnerImageSetting, FargateTaskDefinition>>;
  /** Whether any runner image is in ECR, built ones included (the execution role then needs ecr:GetAuthorizationToken on `*`). */
  readonly pullsFromEcr: boolean;
  readonly #perRunFamilyPrefix: string;

  constructor(scope: Construct, id: string, props: RunnersProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.#perRunFamilyPrefix = props.perRunFamilyPrefix;

    this.cluster = new Cluster(this, 'Cluster', {
      vpc: props.vpc,
      containerInsightsV2: ContainerInsights.ENABLED,
      enableFargateCapacityProviders: false,
    });
    this.logGroup = new LogGroup(this, 'RunLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });

    // Only ECS acting for this account may assume the roles (confused-deputy guard).
    const ecsTasks = () =>
      new ServicePrincipal('ecs-tasks.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'ecs', resource: '*' }) },
      });
    this.executionRole = new Role(this, 'ExecutionRole', {
      assumedBy: ecsTasks(),
      description: 'ECS execution role of Remote Worker runner tasks: logs, image pulls, bound secrets',
    });
    this.taskRole = new Role(this, 'TaskRole', {
      assumedBy: ecsTasks(),
      description: 'Role of the Remote Worker runner container: reads per-run secrets only',
    });
    this.taskRole.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [secretArnsUnder(stack, runSecretsPrefix(props.secretsPrefix))],
      }),
    );

    this.logGroup.grantWrite(this.executionRole);
    this.executionRole.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [secretArnsUnder(stack, props.secretsPrefix)],
      }),
    );
    const credentials: ISecret | undefined =
      props.registryCredentialsSecretName === undefined
        ? undefined
        : Secret.fromSecretNameV2(this, 'RegistryCredentials', props.registryCredentialsSecretName);

    // ECR images through fromEcrRepository, which grants the execution role pull on exactly that repository.
    const repositories = new Map<string, IRepository>();
    const containerImage = (image: string): ContainerImage => {
      const ecr = ECR_IMAGE.exec(image);
      if (ecr === null) {
        return credentials === undefined
          ? ContainerImage.fromRegistry(image)
          : ContainerImage.fromRegistry(image, { credentials });
      }
      const [, account, region, name = '', tag, digest] = ecr;
      const arn = stack.formatArn({
        service: 'ecr',
        resource: 'repository',
        resourceName: name,
        ...(account === undefined ? {} : { account }),
        ...(region === undefined ? {} : { region }),
      });
      let repository = repositories.get(arn);
      if (repository === undefined) {
        repository = Repository.fromRepositoryAttributes(this, `Repository${repositories.size}`, {
          repositoryArn: arn,
          repositoryName: name,
        });
        repositories.set(arn, repository);
      }
      return ContainerImage.fromEcrRepository(repository, digest ?? tag ?? 'latest');
    };

    const definitions: Partial<Record<RunnerImageSetting, FargateTaskDefinition>> = {};
    for (const setting of RUNNER_IMAGE_SETTINGS) {
      const image = props.images[setting];
      const family = taskFamilyOf(props.namePrefix, setting);
      const def = new FargateTaskDefinition(this, `${pascal(setting)}Task`, {
        family,
        cpu: props.cpu,
        memoryLimitMiB: props.memoryMiB,
        executionRole: this.executionRole,
        taskRole: this.taskRole,
        runtimePlatform: {
          operatingSystemFamily: OperatingSystemFamily.LINUX,
          cpuArchitecture: props.architecture === 'arm64' ? CpuArchitecture.ARM64 : CpuArchitecture.X86_64,
        },
      });
      def.addContainer(RUNNER_CONTAINER_NAME, {
        containerName: RUNNER_CONTAINER_NAME,
        image: props.builtImages?.[setting] ?? containerImage(image),
        essential: true,
        // Time for the task shim to forward SIGTERM, wait its grace and remove secret files (Fargate max 120 s).
        stopTimeout: MAX_STOP_TIMEOUT,
        logging: LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: RUNNER_LOG_STREAM_PREFIX }),
      });
      definitions[setting] = def;
    }
    this.taskDefinitions = definitions as Record<RunnerImageSetting, FargateTaskDefinition>;
    // A built image lives in the bootstrap's ECR repository: fromDockerImageAsset grants the pull.
    this.pullsFromEcr =
      repositories.size > 0 || RUNNER_IMAGE_SETTINGS.some((s) => props.builtImages?.[s] !== undefined);
  }

  /**
   * Families the ECS launcher registers, any revision: a run's own (`<prefix><runId>`, runs with
   * secrets minted or submitted for them) and the shared ones carrying stored secret references
   * such as the SSH key (`<prefix>shared-<hash>`, one per content, registered once and reused).
   */
  perRunDefinitionArns(): string {
    return Stack.of(this).formatArn({
      service: 'ecs',
      resource: 'task-definition',
      resourceName: `${this.#perRunFamilyPrefix}*`,
    });
  }

  clusterTasksArn(): string {
    return Stack.of(this).formatArn({
      service: 'ecs',
      resource: 'task',
      resourceName: `${this.cluster.clusterName}/*`,
    });
  }

  private onThisCluster() {
    return { ArnEquals: { 'ecs:cluster': this.cluster.clusterArn } };
  }

  /** What the ECS launcher's `launch` calls: ListTasks (adopt), Register/Describe/ListTaskDefinitions (secrets), RunTask. */
  grantLaunch(grantee: IGrantable): void {
    const p = grantee.grantPrincipal;
    p.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ecs:RunTask'],
        resources: [
          ...RUNNER_IMAGE_SETTINGS.map((s) => this.taskDefinitions[s].taskDefinitionArn),
          this.perRunDefinitionArns(),
        ],
        conditions: this.onThisCluster(),
      }),
    );
    // RunTask with `tags` needs TagResource on the task it creates.
    p.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ecs:TagResource'],
        resources: [this.clusterTasksArn(), this.perRunDefinitionArns()],
        conditions: { StringEquals: { 'ecs:CreateAction': ['RunTask', 'RegisterTaskDefinition'] } },
      }),
    );
    // These task-definition actions accept no resource ARN; PassRole below is what confines them.
    p.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ecs:RegisterTaskDefinition', 'ecs:DescribeTaskDefinition', 'ecs:ListTaskDefinitions'],
        resources: ['*'],
      }),
    );
    p.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['iam:PassRole'],
        resources: [this.executionRole.roleArn, this.taskRole.roleArn],
        conditions: { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } },
      }),
    );
    this.grantObserve(grantee);
  }

  /** What `status`, `cancel` and adoption call: DescribeTasks, StopTask, ListTasks on this cluster. */
  grantObserve(grantee: IGrantable): void {
    const p = grantee.grantPrincipal;
    p.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ecs:DescribeTasks', 'ecs:StopTask'],
        resources: [this.clusterTasksArn()],
        conditions: this.onThisCluster(),
      }),
    );
    // ListTasks is authorised on container instances, which Fargate has none of: scope it by cluster.
    p.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['ecs:ListTasks'], resources: ['*'], conditions: this.onThisCluster() }),
    );
  }

  /** What `cancel` calls on a running task: StopTask on this cluster's tasks. */
  grantStop(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ecs:StopTask'],
        resources: [this.clusterTasksArn()],
        conditions: this.onThisCluster(),
      }),
    );
  }

  /** What `cleanup` calls: deregister a run's own task definition family. */
  grantCleanup(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['ecs:ListTaskDefinitions', 'ecs:DeregisterTaskDefinition'],
        resources: ['*'],
      }),
    );
  }
}

/** Secrets Manager ARNs of every secret whose name starts with `prefix` (ARNs end in a random suffix). */
export function secretArnsUnder(stack: Stack, prefix: string): string {
  return stack.formatArn({
    service: 'secretsmanager',
    resource: 'secret',
    resourceName: `${prefix}*`,
    arnFormat: ArnFormat.COLON_RESOURCE_NAME,
  });
}

const pascal = (s: string) => s.replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());
