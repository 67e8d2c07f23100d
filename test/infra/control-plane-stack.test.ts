import { App, type CfnElement } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_ROUTES } from '../../functions/api/routes.ts';
import { PROJECT_ROOT } from '../../infra/app.ts';
import { loadEnvironmentConfig } from '../../infra/config.ts';
import { ControlPlaneStack } from '../../infra/stacks/control-plane-stack.ts';
import { AWS_ENVIRONMENT_KEYS, buildAwsDeps, readAwsEnvironment } from '../../shared/composition/aws.ts';
import {
  readSealedSettings,
  SEALED_SETTINGS_DIGEST_ENV,
  SEALED_SETTINGS_ENV,
} from '../../shared/config/sealed-settings.ts';
import { SETTING_KEYS } from '../../shared/config/settings.ts';
import { runTableDefinition } from '../../shared/domain/run-table.ts';
import { cdkContext, type Synthesized, synth } from './synth.ts';

type Json = any;

/** A CloudFormation value as one string: pseudo parameters resolved, references as `<LogicalId[.Attr]>`. */
function flat(value: Json): string {
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map(flat).join(',');
  if (value?.['Fn::Join'] !== undefined) {
    const [delimiter, items] = value['Fn::Join'];
    return (items as Json[]).map(flat).join(delimiter);
  }
  if (value?.Ref === 'AWS::URLSuffix') return 'amazonaws.com';
  if (value?.Ref === 'AWS::Partition') return 'aws';
  if (value?.Ref !== undefined) return `<${value.Ref}>`;
  if (value?.['Fn::GetAtt'] !== undefined) return `<${value['Fn::GetAtt'].join('.')}>`;
  return JSON.stringify(value);
}

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

const DATA_SERVICES = ['dynamodb', 'sqs', 's3', 'secretsmanager', 'logs', 'ecs', 'ecr'];

describe.each(['dev', 'prod'])('ControlPlaneStack (%s)', (envName) => {
  let s: Synthesized;
  let resources: Record<string, Json>;
  const config = loadEnvironmentConfig(envName, cdkContext().environments);
  const idOf = (construct: IConstruct): string =>
    s.stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const ofType = (type: string): [string, Json][] =>
    Object.entries(resources).filter(([, r]) => r.Type === type);
  /** The project's handlers: every function but aws-s3-deployment's (the console's; test/infra/console-site.test.ts). */
  const handlers = (): [string, Json][] =>
    ofType('AWS::Lambda::Function').filter(([id]) => !id.startsWith('CustomCDKBucketDeployment'));
  /** Every identity-policy statement: role inline policies, AWS::IAM::Policy and managed policies. */
  const identityStatements = (): { owner: string; statement: Json }[] => {
    const out: { owner: string; statement: Json }[] = [];
    for (const [id, r] of Object.entries(resources)) {
      const docs: Json[] =
        r.Type === 'AWS::IAM::Role'
          ? asArray(r.Properties.Policies).map((p: Json) => p.PolicyDocument)
          : r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy'
            ? [r.Properties.PolicyDocument]
            : [];
      for (const doc of docs)
        for (const statement of asArray(doc.Statement)) out.push({ owner: id, statement });
    }
    return out;
  };

  beforeAll(() => {
    s = synth(envName);
    resources = s.template.toJSON().Resources;
  });

  describe('API', () => {
    it('routes every key of API_ROUTES, each behind an authorizer', () => {
      const routes = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);

      expect(routes.map((r) => r.RouteKey).sort()).toEqual(Object.keys(API_ROUTES).sort());
      for (const route of routes) {
        if (config.jwt === undefined) {
          expect(route.AuthorizationType, route.RouteKey).toBe('AWS_IAM');
        } else {
          expect(route.AuthorizationType, route.RouteKey).toBe('JWT');
          expect(route.AuthorizerId, route.RouteKey).toBeDefined();
          expect(route.AuthorizationScopes, route.RouteKey).toEqual(config.jwt.scopes);
        }
      }
    });

    it('uses the configured JWT issuer and audience, or IAM when none is configured', () => {
      const authorizers = ofType('AWS::ApiGatewayV2::Authorizer').map(([, r]) => r.Properties);

      if (config.jwt === undefined) {
        expect(authorizers).toEqual([]);
      } else {
        expect(authorizers).toEqual([
          expect.objectContaining({
            AuthorizerType: 'JWT',
            JwtConfiguration: { Issuer: config.jwt.issuer, Audience: config.jwt.audience },
          }),
        ]);
      }
    });

    it('writes JSON access logs and throttles the stage', () => {
      s.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        AccessLogSettings: {
          DestinationArn: { 'Fn::GetAtt': [idOf(s.stack.api.accessLogs), 'Arn'] },
          Format: Match.stringLikeRegexp('"requestId":"\\$context.requestId"'),
        },
        DefaultRouteSettings: {
          ThrottlingRateLimit: config.api.rateLimit,
          ThrottlingBurstLimit: config.api.burstLimit,
        },
      });
    });
  });

  describe('queues', () => {
    it('encrypts every queue and denies every request not made over TLS', () => {
      const queues = ofType('AWS::SQS::Queue');
      const policies = ofType('AWS::SQS::QueuePolicy').map(([, r]) => r.Properties);

      expect(queues).toHaveLength(5);
      for (const [id, queue] of queues) {
        expect(queue.Properties.SqsManagedSseEnabled, id).toBe(true);
        const policy = policies.find((p) => p.Queues.some((q: Json) => q.Ref === id));
        expect(policy?.PolicyDocument.Statement, id).toContainEqual(
          expect.objectContaining({
            Effect: 'Deny',
            Principal: { AWS: '*' },
            Action: 'sqs:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        );
      }
    });

    it('dead-letters dispatch and relay messages after dispatch_max_receive_count receives', () => {
      const { queues } = s.stack;

      for (const [queue, dlq] of [
        [queues.dispatch, queues.dispatchDlq],
        [queues.relay, queues.relayDlq],
      ] as const) {
        expect(resources[idOf(queue)].Properties.RedrivePolicy).toEqual({
          deadLetterTargetArn: { 'Fn::GetAtt': [idOf(dlq), 'Arn'] },
          maxReceiveCount: config.parsedSettings.dispatch_max_receive_count,
        });
      }
    });

    it('hides a message for at least six timeouts of the function that consumes it', () => {
      const mappings = ofType('AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties);

      expect(mappings).toHaveLength(3);
      for (const mapping of mappings) {
        const queue = resources[mapping.EventSourceArn['Fn::GetAtt'][0]].Properties;
        const fn = resources[mapping.FunctionName.Ref].Properties;
        expect(queue.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.Timeout);
      }
      const dispatch = mappings.find(
        (m) => m.EventSourceArn['Fn::GetAtt'][0] === idOf(s.stack.queues.dispatch),
      );
      expect(dispatch?.FunctionName).toEqual({ Ref: idOf(s.stack.functions.DispatchRuns!.fn) });
    });

    it('reports batch item failures on every SQS event source', () => {
      for (const [id, mapping] of ofType('AWS::Lambda::EventSourceMapping')) {
        expect(mapping.Properties.FunctionResponseTypes, id).toEqual(['ReportBatchItemFailures']);
      }
    });
  });

  describe('runs table', () => {
    it('has the key schema, indexes and TTL attribute of runTableDefinition()', () => {
      const def = runTableDefinition();
      const table = resources[idOf(s.stack.table.table)].Properties;

      expect(table.KeySchema).toEqual(def.keySchema);
      expect(table.TimeToLiveSpecification).toEqual({
        AttributeName: def.timeToLiveAttribute,
        Enabled: true,
      });
      expect(
        table.GlobalSecondaryIndexes.map((g: Json) => ({
          IndexName: g.IndexName,
          KeySchema: g.KeySchema,
          Projection: g.Projection,
        })),
      ).toEqual(def.globalSecondaryIndexes);
    });

    it('is on-demand, encrypted and point-in-time recoverable', () => {
      s.template.hasResourceProperties('AWS::DynamoDB::Table', {
        BillingMode: 'PAY_PER_REQUEST',
        SSESpecification: { SSEEnabled: true },
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      });
    });

    it(`is ${envName === 'dev' ? 'not ' : ''}protected from deletion`, () => {
      const table = resources[idOf(s.stack.table.table)];

      expect(table.Properties.DeletionProtectionEnabled).toBe(envName !== 'dev');
      expect(table.DeletionPolicy).toBe(envName === 'dev' ? 'Delete' : 'Retain');
    });
  });

  describe('functions', () => {
    it('run every handler on nodejs22.x / arm64', () => {
      const functions = handlers();

      expect(functions).toHaveLength(Object.keys(s.stack.functions).length);
      for (const [id, fn] of functions) {
        expect(fn.Properties.Runtime, id).toBe('nodejs22.x');
        expect(fn.Properties.Architectures, id).toEqual(['arm64']);
        expect(fn.Properties.Handler, id).toBe('index.handler');
      }
    });

    it('get exactly the environment the AWS composition root validates, settings included', () => {
      const placeholder = (name: string) =>
        name.endsWith('_QUEUE_URL')
          ? `https://sqs.${config.region}.amazonaws.com/${config.account}/q`
          : 'token';

      for (const [id, fn] of handlers()) {
        const variables: Record<string, Json> = fn.Properties.Environment.Variables;
        const env = Object.fromEntries(
          Object.entries(variables).map(([k, v]) => [k, typeof v === 'string' ? v : placeholder(k)]),
        );
        const settingVariables = [SEALED_SETTINGS_ENV, SEALED_SETTINGS_DIGEST_ENV];
        const nonSettings = Object.keys(env).filter(
          (k) => !settingVariables.includes(k) && !SETTING_KEYS.some((key) => key.toUpperCase() === k),
        );

        expect(nonSettings.sort(), id).toEqual(
          [
            'ASSET_BUCKET',
            'DISPATCH_QUEUE_URL',
            'ECS_CONTAINER_NAME',
            'ECS_LOG_STREAM_PREFIX',
            'ECS_TASK_DEFINITIONS',
            'ECS_TASK_FAMILY_PREFIX',
            'LOG_GROUP',
            'LOG_LEVEL',
            'RELAY_QUEUE_URL',
            'RUNS_TABLE',
            'RUN_SECRETS_PREFIX',
          ].sort(),
        );
        // Nothing the composition root would ignore: every variable is one its schema reads.
        expect(
          nonSettings.filter((k) => !AWS_ENVIRONMENT_KEYS().includes(k)),
          id,
        ).toEqual([]);
        const { env: parsed, settings } = readAwsEnvironment(env);
        // The stack's own task definitions, container and stream prefix, as synthesized.
        const definitions = s.stack.runners.taskDefinitions;
        const synthesized = (construct: IConstruct): Json => resources[idOf(construct)].Properties;
        expect(parsed.ECS_TASK_DEFINITIONS, id).toEqual({
          [config.parsedSettings.ansible_local_image]: synthesized(definitions.ansible_local_image).Family,
          [config.parsedSettings.ansible_cloud_image]: synthesized(definitions.ansible_cloud_image).Family,
          [config.parsedSettings.k8s_runner_image]: synthesized(definitions.k8s_runner_image).Family,
        });
        for (const definition of Object.values(definitions)) {
          const [container] = synthesized(definition).ContainerDefinitions;
          expect(parsed.ECS_CONTAINER_NAME, id).toBe(container.Name);
          expect(parsed.ECS_LOG_STREAM_PREFIX, id).toBe(
            container.LogConfiguration.Options['awslogs-stream-prefix'],
          );
        }
        // The per-run families the launcher registers are the ones RunTask is allowed on.
        const runTaskResources = identityStatements()
          .filter(({ statement }) => asArray<string>(statement.Action).includes('ecs:RunTask'))
          .flatMap(({ statement }) => asArray(statement.Resource).map(flat));
        expect(runTaskResources, id).toContainEqual(
          expect.stringMatching(new RegExp(`:task-definition/${parsed.ECS_TASK_FAMILY_PREFIX}\\*$`)),
        );
        // And with these variables the composition root registers the ECS launcher.
        expect(buildAwsDeps({ ...env, LOG_LEVEL: 'SILENT' }).launchers.ecs?.backend, id).toBe('ecs');
        expect(settings.ansible_runner_aws, id).toBe(config.parsedSettings.ansible_runner_aws);
        expect(settings.ansible_ecs_subnet_id, id).toBe(config.network.runnerSubnetIds.join(','));
        expect(settings.ansible_ecs_security_group_ids, id).toEqual(config.network.runnerSecurityGroupIds);
        expect(variables.ANSIBLE_ECS_EXECUTION_ROLE_ARN, id).toEqual({
          'Fn::GetAtt': [idOf(s.stack.runners.executionRole), 'Arn'],
        });
        expect(variables.ANSIBLE_ECS_CLUSTER, id).toEqual({ Ref: idOf(s.stack.runners.cluster) });
        // The settings synth knew are sealed (checked there, not at cold start); the two references are not.
        const sealed = readSealedSettings(env);
        expect(sealed !== undefined && 'checked' in sealed && sealed.checked, id).toBe(true);
        expect(
          Object.keys(env).filter((k) => SETTING_KEYS.some((key) => key.toUpperCase() === k)),
          id,
        ).toEqual(['ANSIBLE_ECS_CLUSTER', 'ANSIBLE_ECS_EXECUTION_ROLE_ARN']);
      }
    });
  });

  describe('IAM', () => {
    it('grants no wildcard action, and no data action on every resource', () => {
      const statements = identityStatements().filter(({ statement }) => statement.Effect === 'Allow');

      expect(statements.length).toBeGreaterThan(20);
      for (const { owner, statement } of statements) {
        const actions = asArray<string>(statement.Action);
        expect(
          actions.filter((a) => a.includes('*')),
          owner,
        ).toEqual([]);
        if (asArray(statement.Resource).includes('*')) {
          const data = actions.filter(
            (a) =>
              DATA_SERVICES.includes(a.split(':')[0] ?? '') &&
              // These support no resource-level permissions (see infra/nag-suppressions.ts).
              ![
                'ecs:RegisterTaskDefinition',
                'ecs:DescribeTaskDefinition',
                'ecs:ListTaskDefinitions',
                'ecs:DeregisterTaskDefinition',
                'ecs:ListTasks',
                'ecr:GetAuthorizationToken',
              ].includes(a),
          );
          expect(data, owner).toEqual([]);
        }
      }
    });

    it('limits the relay role to its queue and the run-table actions it uses', () => {
      const relayId = idOf(s.stack.relay.role);
      const role = resources[relayId].Properties;
      const statements = role.Policies.flatMap((p: Json) => p.PolicyDocument.Statement);
      const table = idOf(s.stack.table.table);
      const expected = [
        {
          Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'],
          Resource: `<${idOf(s.stack.queues.relay)}.Arn>`,
        },
        {
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: `<${table}.Arn>`,
        },
        { Action: 'dynamodb:Query', Resource: `<${table}.Arn>/index/runs-by-state` },
        ...(config.relay.readSecrets
          ? [
              {
                Action: 'secretsmanager:GetSecretValue',
                Resource: `arn:aws:secretsmanager:${config.region}:${config.account}:secret:${config.secretsPrefix}*`,
              },
              // The relay deletes a relay run's per-run secret (a plaintext password sent at submit) when it ends it.
              {
                Action: 'secretsmanager:DeleteSecret',
                Resource: `arn:aws:secretsmanager:${config.region}:${config.account}:secret:${config.secretsPrefix}runs/*`,
              },
            ]
          : []),
      ];

      expect(statements.map((st: Json) => ({ Action: st.Action, Resource: flat(st.Resource) }))).toEqual(
        expected,
      );
      expect(role.ManagedPolicyArns).toBeUndefined();
      const attached = ofType('AWS::IAM::Policy').filter(([, p]) =>
        asArray(p.Properties.Roles).some((r: Json) => r.Ref === relayId),
      );
      expect(attached).toEqual([]);
    });

    it('lets only the configured principal assume the relay role', () => {
      const trust = resources[idOf(s.stack.relay.role)].Properties.AssumeRolePolicyDocument.Statement;

      if (config.relay.principalArn !== undefined) {
        expect(trust).toEqual([
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { AWS: config.relay.principalArn } },
        ]);
        expect(ofType('AWS::RolesAnywhere::Profile')).toEqual([]);
      } else {
        for (const statement of trust) {
          expect(statement.Principal).toEqual({ Service: 'rolesanywhere.amazonaws.com' });
          expect(statement.Condition.ArnEquals).toEqual({
            'aws:SourceArn': config.relay.rolesAnywhere?.trustAnchorArn,
          });
        }
        s.template.hasResourceProperties('AWS::RolesAnywhere::Profile', {
          RoleArns: [{ 'Fn::GetAtt': [idOf(s.stack.relay.role), 'Arn'] }],
          DurationSeconds: 3600,
        });
      }
    });

    it('outputs what the relay agent is configured with', () => {
      const outputs = s.template.toJSON().Outputs;

      expect(outputs.RelayQueueUrl.Value).toEqual({ Ref: idOf(s.stack.queues.relay) });
      expect(outputs.RunsTableName.Value).toEqual({ Ref: idOf(s.stack.table.table) });
      expect(outputs.RelayRoleArn.Value).toEqual({ 'Fn::GetAtt': [idOf(s.stack.relay.role), 'Arn'] });
    });
  });

  describe('runners', () => {
    it('turn on Container Insights for the cluster', () => {
      s.template.hasResourceProperties('AWS::ECS::Cluster', {
        ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }],
      });
    });

    it('define one task per runner image setting, logging to the runs log group', () => {
      const images = ofType('AWS::ECS::TaskDefinition').map(([, r]) => {
        const [container] = r.Properties.ContainerDefinitions;
        expect(container.Name).toBe('runner');
        expect(container.LogConfiguration).toEqual({
          LogDriver: 'awslogs',
          Options: {
            'awslogs-group': { Ref: idOf(s.stack.runners.logGroup) },
            'awslogs-stream-prefix': 'run',
            'awslogs-region': config.region,
          },
        });
        return flat(container.Image);
      });

      // A setting the operator wrote is pulled as named; one left unset is built from runners/ (test/infra/runner-images.test.ts).
      expect(images).toEqual(
        (['ansible_local_image', 'ansible_cloud_image', 'k8s_runner_image'] as const).map((setting) =>
          config.rawSettings[setting] === undefined
            ? expect.stringMatching(/\.dkr\.ecr\..*\/cdk-hnb659fds-container-assets-.*:[0-9a-f]{64}"\}$/)
            : config.parsedSettings[setting],
        ),
      );
    });

    it('give the runner container a role that may only read the per-run secrets', () => {
      // Item 1 changes this: the role had no permission at all; the shim now fetches its run's own secrets.
      const taskRoleId = idOf(s.stack.runners.taskRole);
      const role = resources[taskRoleId].Properties;

      expect(role.Policies).toBeUndefined();
      expect(role.ManagedPolicyArns).toBeUndefined();
      const policies = ofType('AWS::IAM::Policy').filter(([, p]) =>
        asArray(p.Properties.Roles).some((r: Json) => r.Ref === taskRoleId),
      );
      expect(policies).toHaveLength(1);
      const statements = policies.flatMap(([, p]) => asArray(p.Properties.PolicyDocument.Statement));
      expect(statements).toHaveLength(1);
      expect(statements[0].Action).toBe('secretsmanager:GetSecretValue');
      expect(flat(statements[0].Resource)).toContain(`:secret:${config.secretsPrefix}runs/*`);
    });
  });

  describe('events', () => {
    it("send this cluster's runner task state changes to the status sync", () => {
      const rule = resources[idOf(s.stack.events.taskStateRule)].Properties;

      expect(rule.EventPattern).toEqual({
        source: ['aws.ecs'],
        'detail-type': ['ECS Task State Change'],
        detail: {
          clusterArn: [{ 'Fn::GetAtt': [idOf(s.stack.runners.cluster), 'Arn'] }],
          group: [{ prefix: 'rw:' }],
        },
      });
      expect(rule.Targets).toEqual([
        expect.objectContaining({
          Arn: { 'Fn::GetAtt': [idOf(s.stack.functions.EcsTaskStateChange!.fn), 'Arn'] },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [idOf(s.stack.queues.eventsDlq), 'Arn'] } },
        }),
      ]);
    });

    it('run the reconciler on a schedule', () => {
      const rule = resources[idOf(s.stack.events.reconcileSchedule)].Properties;

      expect(rule.ScheduleExpression).toBe('rate(1 minute)');
      expect(rule.Targets[0].Arn).toEqual({
        'Fn::GetAtt': [idOf(s.stack.functions.ReconcileRuns!.fn), 'Arn'],
      });
    });

    it('start the backend poller every minute, ending before the next tick', () => {
      const rule = resources[idOf(s.stack.events.pollSchedule)].Properties;
      const poller = resources[idOf(s.stack.functions.PollBackends!.fn)].Properties;

      expect(rule.ScheduleExpression).toBe('rate(1 minute)');
      expect(rule.Targets[0].Arn).toEqual({
        'Fn::GetAtt': [idOf(s.stack.functions.PollBackends!.fn), 'Arn'],
      });
      expect(poller.Timeout).toBeLessThanOrEqual(60);
    });
  });

  describe('alarms', () => {
    const alarms = () => ofType('AWS::CloudWatch::Alarm').map(([, r]) => r.Properties);

    it('watch the depth of every dead-letter queue', () => {
      const { queues } = s.stack;
      for (const dlq of [queues.dispatchDlq, queues.relayDlq, queues.eventsDlq]) {
        expect(alarms()).toContainEqual(
          expect.objectContaining({
            MetricName: 'ApproximateNumberOfMessagesVisible',
            Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [idOf(dlq), 'QueueName'] } }],
            Threshold: 1,
          }),
        );
      }
    });

    it('watch dispatcher errors and reconciler findings', () => {
      expect(alarms()).toContainEqual(
        expect.objectContaining({
          MetricName: 'Errors',
          Dimensions: [{ Name: 'FunctionName', Value: { Ref: idOf(s.stack.functions.DispatchRuns!.fn) } }],
        }),
      );
      expect(alarms()).toContainEqual(
        expect.objectContaining({ Namespace: 'RemoteWorker', MetricName: 'ReconcilerFindings' }),
      );
      s.template.hasResourceProperties('AWS::Logs::MetricFilter', {
        LogGroupName: { Ref: idOf(s.stack.functions.ReconcileRuns!.logGroup) },
        FilterPattern: Match.stringLikeRegexp('reconciled runs'),
      });
    });

    it('notify the alarm e-mail through an encrypted topic', () => {
      const topic = idOf(s.stack.alarms.topic);
      for (const alarm of alarms()) expect(alarm.AlarmActions).toEqual([{ Ref: topic }]);
      s.template.hasResourceProperties('AWS::SNS::Subscription', {
        Protocol: 'email',
        Endpoint: config.alarmEmail,
      });
      expect(resources[topic].Properties.KmsMasterKeyId).toBeDefined();
    });
  });

  describe('cdk-nag', () => {
    it('reports no unacknowledged AwsSolutions error or warning', () => {
      const report = new AwsSolutionsChecks().validateScope(s.app);

      expect(report.violations.map((v) => `${v.ruleName} ${v.violatingResources[0]?.constructPath}`)).toEqual(
        [],
      );
    });

    it('leaves no CDK warning or error annotation', () => {
      const annotations = Annotations.fromStack(s.stack);

      expect(annotations.findWarning('*', Match.anyValue())).toEqual([]);
      expect(annotations.findError('*', Match.anyValue())).toEqual([]);
    });
  });
});

describe('infra/nag-suppressions.ts', () => {
  /** Each acknowledgement in the tree: rule id → reasons. */
  function acknowledgements(root: IConstruct): Map<string, string[]> {
    const out = new Map<string, string[]>();
    const visit = (node: IConstruct) => {
      for (const entry of node.node.metadata) {
        if (entry.type !== 'aws:cdk:acknowledged-rules') continue;
        for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
          const rule = id.replace(/^annotation::/i, '');
          out.set(rule, [...(out.get(rule) ?? []), reason]);
        }
      }
      for (const child of node.node.children) visit(child);
    };
    visit(root);
    return out;
  }

  it.each(['dev', 'prod'])(
    'acknowledges only findings that exist without it, each with a reason (%s)',
    (envName) => {
      const bare = new App({ context: { ...cdkContext(), env: envName, 'aws:cdk:bundling-stacks': [] } });
      const config = loadEnvironmentConfig(envName, cdkContext().environments);
      new ControlPlaneStack(bare, `RemoteWorker-${envName}`, {
        env: { account: config.account, region: config.region },
        config,
        projectRoot: PROJECT_ROOT,
      });
      const findings = new Set(
        new AwsSolutionsChecks().validateScope(bare).violations.map((v) => v.ruleName),
      );
      const acknowledged = acknowledgements(synth(envName).app);

      // Without the suppressions the pack does find things, so the zero above is not vacuous.
      expect(findings.size).toBeGreaterThan(3);
      for (const [rule, reasons] of acknowledged) {
        if (rule.startsWith('AwsSolutions-')) expect(findings, rule).toContain(rule);
        for (const reason of reasons) expect(reason.length, rule).toBeGreaterThan(40);
      }
    },
  );
});
