import { startLocalMode } from '../shared/local-mode/local-mode.ts';

/** `npm start`: local mode in the foreground. Ctrl-C drains for up to 10 s; unfinished runs are adopted on the next start. */
async function main(): Promise<void> {
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
  process.stderr.write(`${lines.join('\n')}\n`);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) process.exit(1);
    closing = true;
    local.logger.info('shutting down', { signal });
    local.close({ drainMs: 10_000 }).then(
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
