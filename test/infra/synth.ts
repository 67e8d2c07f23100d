import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { addControlPlane } from '../../infra/app.ts';
import type { ControlPlaneStack } from '../../infra/stacks/control-plane-stack.ts';

export const REPO = resolve(import.meta.dirname, '../..');

/** cdk.json's context, as `cdk synth` hands it to the app. */
export function cdkContext(): Record<string, unknown> {
  const cdk = JSON.parse(readFileSync(resolve(REPO, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  return cdk.context;
}

export interface Synthesized {
  readonly app: App;
  readonly stack: ControlPlaneStack;
  readonly template: Template;
}

/**
 * The app as `cdk synth -c env=<envName>` builds it, in-process. Bundling is
 * skipped (`aws:cdk:bundling-stacks: []`, what the CLI itself does for stacks
 * it does not deploy): the assertions read the template, and the real
 * bundling is covered by the `cdk synth` child-process test.
 */
export function synth(envName: string, extraContext: Record<string, unknown> = {}): Synthesized {
  const app = new App({
    context: { ...cdkContext(), env: envName, 'aws:cdk:bundling-stacks': [], ...extraContext },
  });
  const stack = addControlPlane(app);
  return { app, stack, template: Template.fromStack(stack) };
}

export const CERTIFICATE_ARN =
  'arn:aws:acm:us-east-1:222222222222:certificate/0b8d6f7e-3c2a-4e1f-9d5b-7a6c5e4d3b2a';

/** Context for prod with the console on a custom domain (cdk.json's prod uses the distribution's own domain). */
export function withDomain(): Record<string, unknown> {
  const environments = cdkContext().environments as Record<string, Record<string, any>>;
  const prod = environments.prod ?? {};
  return {
    environments: {
      ...environments,
      prod: {
        ...prod,
        console: {
          ...prod.console,
          domainName: 'console.example.com',
          certificateArn: CERTIFICATE_ARN,
          connectOrigins: ['https://login-tokens.example.com/oauth2'],
        },
      },
    },
  };
}
