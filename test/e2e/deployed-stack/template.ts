import { cdkContext, synth } from '../../infra/synth.ts';
import type { DeployedStack } from './deploy.ts';
import type { MotoNetwork } from './network.ts';

type Template = Parameters<typeof import('./deploy.ts').forMoto>[0];

/**
 * The dev template as `cdk synth -c env=dev` makes it, with cdk.json's dev
 * network replaced by the VPC that exists in moto's account (an operator
 * writes their own VPC there; RunTask needs its subnets to exist), and path
 * metadata on, as the CLI sets it, so each function's construct id can be read.
 */
export function devTemplate(network: MotoNetwork): Template {
  const context = cdkContext() as { environments: Record<string, Record<string, unknown>> };
  const { template } = synth('dev', {
    'aws:cdk:enable-path-metadata': true,
    environments: { ...context.environments, dev: { ...context.environments.dev, network } },
  });
  return template.toJSON() as Template;
}

/**
 * The template with `action` taken out of the policy statements of one
 * function's role (a statement left with no action goes too). Throws when no
 * statement grants it, so the proof cannot pass by removing nothing.
 */
export function withoutGrant(template: Template, roleLogicalId: string, action: string): Template {
  const copy = structuredClone(template);
  let removed = 0;
  for (const resource of Object.values(copy.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties.Roles ?? []) as { Ref?: string }[];
    if (!roles.some((r) => r.Ref === roleLogicalId)) continue;
    const statements = resource.Properties.PolicyDocument.Statement as { Action: string | string[] }[];
    resource.Properties.PolicyDocument.Statement = statements.flatMap((s) => {
      const actions = [s.Action].flat();
      if (!actions.includes(action)) return [s];
      removed += 1;
      const rest = actions.filter((a) => a !== action);
      return rest.length === 0 ? [] : [{ ...s, Action: rest.length === 1 ? rest[0] : rest }];
    });
  }
  if (removed === 0) throw new Error(`no statement of ${roleLogicalId} grants ${action}`);
  return copy;
}

/** The queues a function's SQS event source mappings read, from the template. */
export function eventSourceQueues(stack: DeployedStack, functionId: string): { url: string; arn: string }[] {
  const fn = stack.functions[functionId];
  return Object.values(stack.template.Resources)
    .filter(
      (r) => r.Type === 'AWS::Lambda::EventSourceMapping' && r.Properties.FunctionName?.Ref === fn?.logicalId,
    )
    .map((r) => {
      const url = stack.physicalIds.get(String(r.Properties.EventSourceArn['Fn::GetAtt'][0])) ?? '';
      return { url, arn: queueArnOf(url) };
    });
}

/** `https://sqs.<region>.amazonaws.com/<account>/<name>` → `arn:aws:sqs:<region>:<account>:<name>` */
export function queueArnOf(url: string): string {
  const { hostname, pathname } = new URL(url);
  const [, account, name] = pathname.split('/');
  const region = hostname.split('.')[1];
  return `arn:aws:sqs:${region}:${account}:${name}`;
}

/** Statements of every AWS::IAM::Policy in the template, as `<role logical id>#<policy logical id>#<index>`. */
export function policyStatements(template: Template): string[] {
  return Object.entries(template.Resources).flatMap(([logicalId, r]) =>
    r.Type !== 'AWS::IAM::Policy'
      ? []
      : (r.Properties.PolicyDocument.Statement as unknown[]).map((_s, i) => `${logicalId}#${i}`),
  );
}
