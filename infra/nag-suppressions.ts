import { Validations } from 'aws-cdk-lib';
// cdk-nag's own flattener, so the finding ids built here are exactly the ones its IAM5 rule reports.
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';
import { deploymentHandler } from './constructs/console-site.ts';
import { ec2DiscoveryRegions } from './constructs/discovery-schedule.ts';
import { secretArnsUnder } from './constructs/runners.ts';
import { runSecretsPrefix } from './function-environment.ts';
import type { Access } from './handlers.ts';
import type { ControlPlaneStack } from './stacks/control-plane-stack.ts';

/**
 * Every cdk-nag AwsSolutions acknowledgement (and the one CDK annotation warning) of the app, each on the narrowest
 * construct it applies to and with its reason. IAM5 findings are acknowledged
 * one resource at a time (`AwsSolutions-IAM5[Resource::…]`), so a new wildcard
 * anywhere still fails synth until someone writes down why here.
 */
export function applyNagSuppressions(stack: ControlPlaneStack): void {
  const ack = (scope: IConstruct, id: string, reason: string) =>
    Validations.of(scope).acknowledge({ id, reason });
  const wildcard = (resource: string) =>
    `AwsSolutions-IAM5[Resource::${flattenCfnReference(stack.resolve(resource))}]`;
  const ANY_RESOURCE = 'AwsSolutions-IAM5[Resource::*]';

  const secrets = wildcard(secretArnsUnder(stack, stack.config.secretsPrefix));
  const SECRETS_REASON =
    'Runs bind secrets by name ("Use a secret"), chosen per run, so they cannot be listed at deploy time; ' +
    `access is confined to names under this environment's prefix (${stack.config.secretsPrefix}), ` +
    'and Secrets Manager ARNs end in a random suffix that only a wildcard matches';

  // Per function: L1, and the wildcards each kind of access needs.
  const anyResourceReasons: Partial<Record<Access, string>> = {
    'ecs:launch':
      'ecs:RegisterTaskDefinition, DescribeTaskDefinition and ListTaskDefinitions support no resource-level ' +
      'permissions; what a registered definition can do is bounded by iam:PassRole, which names only the ' +
      "runners' execution and task roles",
    'ecs:observe':
      'ecs:ListTasks is authorised on container instances, which Fargate has none of; the statement is ' +
      'confined to this cluster by its ecs:cluster condition',
    'ecs:cleanup':
      'ecs:ListTaskDefinitions and DeregisterTaskDefinition support no resource-level permissions; the ' +
      'launcher only deregisters the per-run families it registered',
  };
  if (ec2DiscoveryRegions(stack.config.parsedSettings, stack.region) !== undefined) {
    anyResourceReasons['discovery:list'] =
      'ec2:DescribeInstances supports no resource-level permissions; the statement is held to the discovery ' +
      'regions (discovery_aws_regions, else this region) by its aws:RequestedRegion condition';
  }
  for (const [name, handler] of Object.entries(stack.functions)) {
    const access = stack.access[name] ?? new Set<Access>();
    ack(
      handler.fn,
      'AwsSolutions-L1',
      'Issue 4 pins nodejs22.x (the Node line the code and its dependencies are tested on); the rule flags ' +
        'every runtime but the newest, and moving to nodejs24.x waits for the test suite to run on Node 24',
    );
    if (access.has('assets:read') || access.has('assets:write')) {
      ack(
        handler.role,
        wildcard(stack.assets.bucket.arnForObjects('*')),
        'Asset keys are user-chosen paths (playbooks, scripts, packages) that object actions cannot name in ' +
          'advance; the statement is confined to the one asset bucket',
      );
    }
    if (access.has('ecs:launch')) {
      ack(
        handler.role,
        wildcard(stack.runners.perRunDefinitionArns()),
        'A run with secret bindings gets its own task-definition family (prefix + run id), registered at ' +
          "launch, so its name is unknown at deploy time; confined to this environment's per-run prefix",
      );
    }
    if (access.has('ecs:launch') || access.has('ecs:observe') || access.has('ecs:stop')) {
      ack(
        handler.role,
        wildcard(stack.runners.clusterTasksArn()),
        'Task ids exist only once RunTask has made them; tagging, describing and stopping are confined to ' +
          "this cluster's tasks (and the ecs:cluster condition)",
      );
    }
    const reasons = [...access].flatMap((a) => anyResourceReasons[a] ?? []);
    if (reasons.length > 0) ack(handler.role, ANY_RESOURCE, reasons.join('. '));
    if (access.has('secrets:run-values')) {
      ack(
        handler.role,
        wildcard(secretArnsUnder(stack, runSecretsPrefix(stack.config.secretsPrefix))),
        'Per-run secrets (values minted at launch: token-prepared kubeconfigs, checked-out logins) are named ' +
          'after run ids, unknown at deploy time; create/update/delete only under the runs/ prefix',
      );
    }
    if (access.has('secrets:describe') || access.has('secrets:read')) {
      ack(
        handler.role,
        secrets,
        access.has('secrets:read')
          ? `${SECRETS_REASON}. GetSecretValue for values a task receives through its backend's own secret ` +
              'mechanism (ACI secureValue, a Kubernetes Secret) and for connection material (SSH keys, kubeconfigs)'
          : `${SECRETS_REASON}. Only DescribeSecret (the ARN for the task definition), never the value`,
      );
    }
  }

  // The runner tasks' execution role.
  const runners = stack.runners;
  ack(
    runners.executionRole,
    secrets,
    `${SECRETS_REASON}. ECS reads them with this role for the shared task-definition revisions, right before the container starts`,
  );
  ack(
    runners.taskRole,
    wildcard(secretArnsUnder(stack, runSecretsPrefix(stack.config.secretsPrefix))),
    'The task shim reads its run’s own secrets (values minted at launch, passwords submitted with the run), ' +
      'named after run ids unknown at deploy time: GetSecretValue only, under the runs/ prefix',
  );
  if (runners.pullsFromEcr) {
    ack(
      runners.executionRole,
      ANY_RESOURCE,
      'ecr:GetAuthorizationToken supports no resource-level permissions; image pulls themselves are ' +
        "limited to the runner images' repositories",
    );
  }

  if (stack.config.relay.readSecrets) {
    ack(
      stack.relay.role,
      secrets,
      `${SECRETS_REASON}. The relay resolves them itself for the runs it executes (relay.readSecrets in cdk.json)`,
    );
    ack(
      stack.relay.role,
      wildcard(secretArnsUnder(stack, runSecretsPrefix(stack.config.secretsPrefix))),
      'A relay run’s plaintext password is kept as a per-run secret named after the run id, unknown at ' +
        'deploy time; the relay ends the run, so it deletes that secret (DeleteSecret only, under the runs/ prefix)',
    );
  }

  // Not cdk-nag, but the app's only other warning, so acknowledged here with the rest.
  ack(
    stack.vpc,
    'Annotation::@aws-cdk/aws-ec2:noSubnetRouteTableId',
    'The runner subnets are imported by id only to hand them to RunTask; nothing in the stack reads their ' +
      'route tables, so context does not carry them',
  );

  ack(
    stack.queues.eventsDlq,
    'AwsSolutions-SQS3',
    'This queue is itself a dead-letter queue (EventBridge targets and the status-sync functions put what ' +
      'they could not deliver or handle here); a further DLQ would only move the problem, and its depth alarms',
  );

  if (stack.console !== undefined) acknowledgeConsole(stack, stack.console, ack);
}

/** The console's site: its CloudFront distribution and aws-s3-deployment's handler. */
function acknowledgeConsole(
  stack: ControlPlaneStack,
  site: NonNullable<ControlPlaneStack['console']>,
  ack: (scope: IConstruct, id: string, reason: string) => void,
): void {
  const cdn = site.distribution;
  ack(
    cdn,
    'AwsSolutions-CFR1',
    'Operators sign in from wherever they work; the site serves only the public files of the console, and every ' +
      'API call it makes is authorised by the JWT authorizer, so a country filter would protect nothing',
  );
  ack(
    cdn,
    'AwsSolutions-CFR2',
    'The distribution serves static, public files (no data, no server code: GET and HEAD only, cached); the API ' +
      'it calls is throttled and behind the JWT authorizer. A CloudFront web ACL lives in us-east-1 and is an ' +
      "operator's choice to attach (webAclId), not something every environment pays for",
  );
  if (stack.config.console?.domainName === undefined) {
    ack(
      cdn,
      'AwsSolutions-CFR4',
      "Without console.domainName the site is on the distribution's own *.cloudfront.net name, whose default " +
        'certificate CloudFront serves with its own policy (TLSv1 allowed, the distribution cannot raise it). ' +
        'Setting console.domainName and certificateArn gives TLSv1.2_2021 (docs/console.md)',
    );
  }
  const role = site.deploymentRole;
  if (role !== undefined) {
    ack(
      role,
      `AwsSolutions-IAM5[Resource::${flattenCfnReference(stack.resolve(site.bucket.arnForObjects('*')))}]`,
      "The console's files are named by the build (content-hashed chunk names), so the deployment handler " +
        'writes and prunes any key, confined to the one console bucket',
    );
    ack(
      role,
      `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-${stack.account}-${stack.region}/*]`,
      'The deployment handler reads the staged console build and config.json from the CDK bootstrap bucket; the ' +
        'key of config.json (a deploy-time document) is chosen by CDK, so only GetObject, under that bucket',
    );
  }
  const handler = deploymentHandler(stack);
  if (handler !== undefined) {
    ack(
      handler,
      'AwsSolutions-L1',
      "aws-s3-deployment's own handler (Python and the AWS CLI layer, shipped inside aws-cdk-lib): its runtime " +
        'is chosen by aws-cdk-lib and moves when aws-cdk-lib is upgraded',
    );
  }
}
