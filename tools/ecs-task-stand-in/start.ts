import { CloudWatchLogsClient } from '@aws-sdk/client-cloudwatch-logs';
import { ECSClient } from '@aws-sdk/client-ecs';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { EcsTaskStandIn, type EcsTaskStandInOptions } from './stand-in.ts';

/**
 * The stand-in with SDK clients from the environment (AWS_ENDPOINT_URL,
 * AWS_REGION, credentials), started; `stop()` stops it and closes them.
 *
 * @example
 * const standIn = await startStandIn({ cluster: 'remote-worker', motoEndpoint: process.env.AWS_ENDPOINT_URL, deliver });
 */
export async function startStandIn(
  options: Pick<EcsTaskStandInOptions, 'cluster' | 'deliver' | 'logger'> & {
    readonly motoEndpoint: string | undefined;
  },
): Promise<{ readonly standIn: EcsTaskStandIn; stop(): Promise<void> }> {
  const ecs = new ECSClient({});
  const secretsManager = new SecretsManagerClient({});
  const logs = new CloudWatchLogsClient({});
  const { motoEndpoint, ...rest } = options;
  const standIn = new EcsTaskStandIn({
    ...rest,
    ecs,
    secretsManager,
    logs,
    region: (await ecs.config.region()) ?? 'us-east-1',
    ...(motoEndpoint === undefined ? {} : { motoEndpoint }),
  });
  await standIn.start();
  return {
    standIn,
    async stop() {
      await standIn.stop();
      for (const client of [ecs, secretsManager, logs]) client.destroy();
    },
  };
}
