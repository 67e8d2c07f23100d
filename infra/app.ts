import { fileURLToPath } from 'node:url';
import { type App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { loadEnvironmentConfig } from './config.ts';
import { applyNagSuppressions } from './nag-suppressions.ts';
import { ControlPlaneStack } from './stacks/control-plane-stack.ts';

/** The repository root: NodejsFunction entries and package-lock.json are resolved from here. */
export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * Adds the chosen environment's stack (`-c env=<name>`, settings from
 * `context.environments.<name>`) to `app`, with cdk-nag AwsSolutions checks
 * and the suppressions of infra/nag-suppressions.ts. Throws
 * EnvironmentConfigError naming every missing or invalid context key.
 *
 * @example
 * const app = new App();
 * addControlPlane(app);
 * app.synth();
 */
export function addControlPlane(app: App): ControlPlaneStack {
  const config = loadEnvironmentConfig(app.node.tryGetContext('env'), app.node.tryGetContext('environments'));
  const stack = new ControlPlaneStack(app, `RemoteWorker-${config.name}`, {
    env: { account: config.account, region: config.region },
    description: `Remote Worker control plane (${config.name})`,
    terminationProtection: !config.isDev,
    config,
    projectRoot: PROJECT_ROOT,
  });
  applyNagSuppressions(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return stack;
}
