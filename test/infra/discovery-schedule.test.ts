import type { CfnElement } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { discoveryRefreshRate } from '../../infra/constructs/discovery-schedule.ts';
import { cdkContext, type Synthesized, synth } from './synth.ts';

type Json = any;

/** cdk.json's dev environment with these settings added. */
function devWith(settings: Record<string, unknown>): Synthesized {
  const environments = cdkContext().environments as Record<string, Record<string, any>>;
  const dev = environments.dev ?? {};
  return synth('dev', {
    environments: { ...environments, dev: { ...dev, settings: { ...dev.settings, ...settings } } },
  });
}

const logicalId = (s: Synthesized, construct: IConstruct): string =>
  s.stack.getLogicalId(construct.node.defaultChild as CfnElement);

/** The identity-policy statements attached to each role, by the role's logical id. */
function statementsByRole(s: Synthesized): Map<string, Json[]> {
  const out = new Map<string, Json[]>();
  for (const resource of Object.values(s.template.toJSON().Resources as Record<string, Json>)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    for (const role of resource.Properties.Roles as Json[]) {
      const statements = [resource.Properties.PolicyDocument.Statement].flat();
      out.set(role.Ref, [...(out.get(role.Ref) ?? []), ...statements]);
    }
  }
  return out;
}

const ec2Statements = (s: Synthesized): [string, Json][] =>
  [...statementsByRole(s)].flatMap(([role, statements]) =>
    statements
      .filter((st) => [st.Action].flat().some((a: string) => a.startsWith('ec2:')))
      .map((st) => [role, st] as [string, Json]),
  );

describe('discovery in the CDK stack', () => {
  it('schedules the refresh function every discovery_refresh_seconds and lets only the refreshers list EC2, in the discovery regions', () => {
    const s = devWith({
      discovery_clouds: ['aws', 'gcp'],
      discovery_aws_regions: ['eu-west-1', 'us-east-1'],
      discovery_refresh_seconds: 300,
      gcp_project_id: 'rw-prod',
    });
    const resources = s.template.toJSON().Resources as Record<string, Json>;
    const scheduled = s.stack.functions.RefreshDiscoverySchedule;
    const api = s.stack.functions.RefreshDiscovery;
    if (scheduled === undefined || api === undefined || s.stack.discovery === undefined) {
      throw new Error('the discovery functions or schedule are missing');
    }

    const rule = resources[logicalId(s, s.stack.discovery.rule)].Properties;
    expect(rule.ScheduleExpression).toBe('rate(5 minutes)');
    expect(rule.Targets).toHaveLength(1);
    expect(rule.Targets[0].Arn).toEqual({ 'Fn::GetAtt': [logicalId(s, scheduled.fn), 'Arn'] });
    expect(rule.Targets[0].DeadLetterConfig.Arn).toEqual({
      'Fn::GetAtt': [logicalId(s, s.stack.queues.eventsDlq), 'Arn'],
    });
    expect(resources[logicalId(s, scheduled.fn)].Properties.Timeout).toBe(30);
    expect(resources[logicalId(s, api.fn)].Properties.Timeout).toBe(30);

    const ec2 = ec2Statements(s);
    expect(ec2.map(([role]) => role).sort()).toEqual(
      [logicalId(s, api.role), logicalId(s, scheduled.role)].sort(),
    );
    for (const [, statement] of ec2) {
      expect(statement).toEqual({
        Action: 'ec2:DescribeInstances',
        Effect: 'Allow',
        Resource: '*',
        Condition: { StringEquals: { 'aws:RequestedRegion': ['eu-west-1', 'us-east-1'] } },
      });
    }
    // Both write the per-cloud items; the reader only reads.
    const actions = (fn: { role: IConstruct }) =>
      (statementsByRole(s).get(logicalId(s, fn.role)) ?? []).flatMap((st) => [st.Action].flat());
    expect(actions(scheduled)).toContain('dynamodb:PutItem');
    expect(actions(api)).toContain('dynamodb:UpdateItem');
    const reader = s.stack.functions.GetDiscovery;
    expect(reader && actions(reader)).toContain('dynamodb:GetItem');
    expect(reader && actions(reader)).not.toContain('dynamodb:PutItem');

    // cdk-nag: clean, and the EC2 wildcard is acknowledged for exactly the two roles that have it.
    expect(new AwsSolutionsChecks().validateScope(s.app).violations.map((v) => v.ruleName)).toEqual([]);
  }, 60_000);

  it('lists EC2 in the stack region when discovery_aws_regions is unset, and grants nothing for Azure or GCP alone', () => {
    const aws = devWith({ discovery_clouds: 'aws' });
    const gcpOnly = devWith({ discovery_clouds: 'gcp', gcp_project_id: 'rw-prod' });

    expect(ec2Statements(aws).map(([, st]) => st.Condition)).toEqual([
      { StringEquals: { 'aws:RequestedRegion': ['eu-west-1'] } },
      { StringEquals: { 'aws:RequestedRegion': ['eu-west-1'] } },
    ]);
    expect(ec2Statements(gcpOnly)).toEqual([]);
    expect(gcpOnly.stack.discovery).toBeDefined();
    expect(new AwsSolutionsChecks().validateScope(gcpOnly.app).violations).toEqual([]);
  }, 60_000);

  it('deploys no schedule, no scheduled function and no EC2 grant without discovery_clouds', () => {
    const s = synth('dev');

    expect(s.stack.discovery).toBeUndefined();
    expect(s.stack.functions.RefreshDiscoverySchedule).toBeUndefined();
    expect(ec2Statements(s)).toEqual([]);
  });

  it('turns discovery_refresh_seconds into an EventBridge rate: whole minutes, none for 0 or no cloud', () => {
    expect(discoveryRefreshRate({ discovery_clouds: ['aws'] })?.toMinutes()).toBe(15);
    expect(
      discoveryRefreshRate({ discovery_clouds: ['aws'], discovery_refresh_seconds: 90 })?.toMinutes(),
    ).toBe(2);
    expect(
      discoveryRefreshRate({ discovery_clouds: ['aws'], discovery_refresh_seconds: 20 })?.toMinutes(),
    ).toBe(1);
    expect(discoveryRefreshRate({ discovery_clouds: ['aws'], discovery_refresh_seconds: 0 })).toBeUndefined();
    expect(discoveryRefreshRate({ discovery_refresh_seconds: 300 })).toBeUndefined();
  });
});
