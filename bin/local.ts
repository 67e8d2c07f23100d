import type { Logger } from '@aws-lambda-powertools/logger';
import { startLocalMode } from '../shared/local-mode/local-mode.ts';

interface Started {
  readonly lines: string[];
  readonly logger: Logger;
  close(options: { drainMs: number }): Promise<void>;
}

async function local(): Promise<Started> {
  const local = await startLocalMode();
  const lines = [
    `Remote Worker local mode is listening on ${local.url}`,
    `  data directory: ${local.dataDir}`,
    `  executor: ${local.executorName ?? 'none (local runs are refused; install ansible-core or start Docker)'}`,
  ];
  if (local.tokenCreated) {
    lines.push(
      `  API token (shown once; also kept in ${local.dataDir}/token):`,
      `    export REMOTE_WORKER_TOKEN=${local.token}`,
    );
  }
  return { lines, logger: local.logger, close: (o) => local.close(o) };
}

/**
 * AWS mode. Against an emulator (AWS_ENDPOINT_URL set), which runs no ECS
 * task, the ECS task stand-in runs them as local processes and feeds their
 * state changes to the status-sync handler; REMOTE_WORKER_ECS_STAND_IN=0
 * turns it off, =1 turns it on without an endpoint. Both are loaded only here:
 * local mode never loads the AWS SDK.
 */
async function aws(): Promise<Started> {
  const { startAwsMode } = await import('../shared/aws-mode/aws-mode.ts');
  const mode = await startAwsMode();
  const endpoint = process.env.AWS_ENDPOINT_URL || undefined;
  const wantStandIn = process.env.REMOTE_WORKER_ECS_STAND_IN ?? (endpoint === undefined ? '0' : '1');
  const cluster = mode.deps.settings.ansible_ecs_cluster;
  let standIn: { stop(): Promise<void> } | undefined;
  if (wantStandIn === '1' && cluster !== undefined && mode.deps.launchers.ecs !== undefined) {
    const { startStandIn } = await import('../tools/ecs-task-stand-in/start.ts');
    standIn = await startStandIn({
      cluster,
      motoEndpoint: endpoint,
      deliver: mode.ecsTaskStateChange,
      logger: mode.deps.logger,
    });
  }
  const lines = [
    `Remote Worker AWS mode is listening on ${mode.url}`,
    `  runs table: ${mode.env.RUNS_TABLE}, dispatch queue: ${mode.env.DISPATCH_QUEUE_URL}`,
    `  runners: ${Object.keys(mode.deps.launchers).join(', ') || 'none'}`,
    ...Object.entries(mode.deps.unavailable).map(([runner, why]) => `  ${runner} unavailable: ${why}`),
    `  relay agent: ${mode.relayRunning ? 'running on the relay queue' : 'not started'}`,
    `  ECS tasks: ${standIn === undefined ? 'run by ECS' : `run as local processes by the ECS task stand-in (cluster ${cluster})`}`,
  ];
  if (mode.tokenCreated) {
    lines.push(
      `  API token (shown once; also kept in ${mode.dataDir}/token):`,
      `    export REMOTE_WORKER_TOKEN=${mode.token}`,
    );
  }
  return {
    lines,
    logger: mode.deps.logger,
    async close(options) {
      await standIn?.stop();
      await mode.close(options);
    },
  };
}

/** `npm start`: local mode (or REMOTE_WORKER_MODE=aws) in the foreground. Ctrl-C drains for up to 10 s. */
async function main(): Promise<void> {
  const modeName = process.env.REMOTE_WORKER_MODE || 'local';
  if (modeName !== 'local' && modeName !== 'aws') {
    throw new Error(`REMOTE_WORKER_MODE must be local or aws, not ${modeName}`);
  }
  const started = modeName === 'aws' ? await aws() : await local();
  process.stderr.write(`${started.lines.join('\n')}\n`);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) process.exit(1);
    closing = true;
    started.logger.info('shutting down', { signal });
    started.close({ drainMs: 10_000 }).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  process.stderr.write(`remote-worker: ${(error as Error).message}\n`);
  process.exit(1);
});
