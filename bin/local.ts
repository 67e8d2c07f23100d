import type { EcsTaskStateChangeEvent } from '../functions/status-sync/ecs-task-state-change.ts';
import type { Logger } from '../shared/ports/logger.ts';
import { startLocalMode } from './local-mode/local-mode.ts';

interface Started {
  readonly lines: string[];
  readonly logger: Logger;
  close(options: { drainMs: number }): Promise<void>;
}

/**
 * Against an emulator (AWS_ENDPOINT_URL set), which runs no ECS task, the ECS
 * task stand-in runs them as local processes and feeds their state changes
 * to the status-sync handler; REMOTE_WORKER_ECS_STAND_IN=0 turns it off, =1
 * turns it on without an endpoint. Loaded only when wanted: local mode
 * without ECS never loads the stand-in.
 */
async function ecsStandIn(
  cluster: string | undefined,
  deliver: ((event: EcsTaskStateChangeEvent) => Promise<unknown>) | undefined,
  logger: Logger,
): Promise<{ stop(): Promise<void> } | undefined> {
  const endpoint = process.env.AWS_ENDPOINT_URL || undefined;
  const wanted = process.env.REMOTE_WORKER_ECS_STAND_IN ?? (endpoint === undefined ? '0' : '1');
  if (wanted !== '1' || cluster === undefined || deliver === undefined) return undefined;
  const { startStandIn } = await import('../tools/ecs-task-stand-in/start.ts');
  return startStandIn({ cluster, motoEndpoint: endpoint, deliver, logger });
}

const standInLine = (standIn: unknown, cluster: string | undefined): string =>
  `  ECS tasks: ${standIn === undefined ? 'run by ECS' : `run as local processes by the ECS task stand-in (cluster ${cluster})`}`;

/** The API token, only on the start that created it: it is never printed again. */
const tokenLines = (mode: { tokenCreated: boolean; dataDir: string; token: string }): string[] =>
  mode.tokenCreated
    ? [
        `  API token (shown once; also kept in ${mode.dataDir}/token):`,
        `    export REMOTE_WORKER_TOKEN=${mode.token}`,
      ]
    : [];

async function local(): Promise<Started> {
  const local = await startLocalMode();
  const standIn = await ecsStandIn(local.ecsCluster, local.ecsTaskStateChange, local.logger);
  const lines = [
    `Remote Worker local mode is listening on ${local.url}`,
    `  data directory: ${local.dataDir}`,
    `  executor: ${local.executorName ?? 'none (local runs are refused; npm start installs Ansible, or start Docker)'}`,
    `  runners: ${local.runners.join(', ') || 'none'}`,
    ...(local.ecsCluster === undefined ? [] : [standInLine(standIn, local.ecsCluster)]),
  ];
  lines.push(...tokenLines(local));
  return {
    lines,
    logger: local.logger,
    async close(options) {
      await standIn?.stop();
      await local.close(options);
    },
  };
}

/** AWS mode, loaded only here: local mode without in-cloud runners never loads the AWS composition. */
async function aws(): Promise<Started> {
  const { startAwsMode } = await import('./aws-mode/aws-mode.ts');
  const mode = await startAwsMode();
  const cluster = mode.deps.settings.ansible_ecs_cluster;
  const standIn = await ecsStandIn(
    cluster,
    mode.deps.launchers.ecs === undefined ? undefined : mode.ecsTaskStateChange,
    mode.deps.logger,
  );
  const lines = [
    `Remote Worker AWS mode is listening on ${mode.url}`,
    `  runs table: ${mode.env.RUNS_TABLE}, dispatch queue: ${mode.env.DISPATCH_QUEUE_URL}`,
    `  runners: ${Object.keys(mode.deps.launchers).join(', ') || 'none'}`,
    ...Object.entries(mode.deps.unavailable).map(([runner, why]) => `  ${runner} unavailable: ${why}`),
    `  relay agent: ${mode.relayRunning ? 'running on the relay queue' : 'not started'}`,
    standInLine(standIn, cluster),
  ];
  lines.push(...tokenLines(mode));
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
