import { POLLED_BACKENDS } from '../../app/poll-backends.ts';
import { readAwsEnvironment } from '../aws-environment.ts';
import { cloudRunnerAvailability } from '../runner-availability.ts';

/**
 * Whether this deployment has a backend the poller asks about (ACI, Cloud
 * Run, Kubernetes), from the environment and settings alone: the launchers
 * the whole composition would build (aws.ts, launchers.ts) are exactly the
 * runners whose settings are complete. PollBackends runs every minute; where
 * none is configured it answers from this, without building the composition
 * and its SDK clients. A bad environment throws its SettingsInvalidError, as
 * the composition would.
 *
 * @example
 * if (!pollsAnyBackend(process.env)) return { sweeps: 0 };
 */
export function pollsAnyBackend(source: Readonly<Record<string, string | undefined>>): boolean {
  const { settings } = readAwsEnvironment(source);
  const { available } = cloudRunnerAvailability(settings, { taskDefinitions: {}, taskDefinitionsKey: '' });
  return available.some((runner) => POLLED_BACKENDS.includes(runner));
}
