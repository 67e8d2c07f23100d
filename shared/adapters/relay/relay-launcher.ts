import type { Run } from '../../domain/run.ts';
import { encodeRunMessage } from '../../domain/run-message.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import type { LogPage, LogReader } from '../../ports/log-store.ts';
import type { WorkQueue } from '../../ports/work-queue.ts';

/**
 * The `local` runner: hands the run to the relay through its queue. The relay
 * claims the run with a conditional write, so a second send on redelivery
 * cannot start it twice. The relay reports status and output itself.
 *
 * @example
 * const launcher = new RelayLauncher(relayQueue, logStore);
 * const handle = await launcher.launch({ run, image }); // 'relay:relay'
 */
export class RelayLauncher implements Launcher {
  readonly backend = 'local' as const;

  constructor(
    private readonly queue: WorkQueue,
    private readonly logReader: LogReader,
  ) {}

  async launch({ run }: LaunchRequest): Promise<string> {
    await this.queue.send(encodeRunMessage(run.id));
    return `relay:${this.queue.name}`;
  }

  async status(): Promise<BackendStatus> {
    return { state: 'self_reporting' };
  }

  logs(_handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    return this.logReader.read(run.id, {
      ...(cursor === undefined ? {} : { cursor }),
      ...(limit === undefined ? {} : { limit }),
    });
  }

  /** The cancel flag on the run is the signal: the relay polls it and stops the task. */
  async cancel(): Promise<void> {}

  /** The relay removes its container or process group and work directory when the run ends. */
  async cleanup(): Promise<void> {}
}
