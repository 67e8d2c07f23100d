import { App } from 'aws-cdk-lib';
import { addControlPlane } from '../app.ts';
import { EnvironmentConfigError } from '../config.ts';

/** `npx cdk synth|diff|deploy -c env=<name>`: one environment's control plane per deploy. */
const app = new App();
try {
  addControlPlane(app);
} catch (error) {
  if (!(error instanceof EnvironmentConfigError)) throw error;
  console.error(error.message);
  process.exit(1);
}
app.synth();
