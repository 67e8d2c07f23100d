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
