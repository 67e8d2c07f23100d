import type { Run } from '../../domain/run.ts';
import { encodeRelayMessage } from '../../domain/run-message.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import type { LogPage, LogReader } from '../../ports/log-store.ts';
import type { WorkQueue } from '../../ports/work-queue.ts';

/**
 * The `local` runner: hands the run to the relay through its queue. The
 * message carries the run's version (its launch intent), so the relay claims
 * with one conditional write and no read, and the runner plan (kind, target
 * id, asset, image, and the target itself when dispatch passes the one it
 * read), never a secret. The claim is conditional, so a second send on
 * redelivery cannot start the run twice. The relay reports status and output
 * itself.
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

  /** `known.target`: the run's target as dispatch read it, so the relay does not read it again. */
  async launch({ run, image, known }: LaunchRequest): Promise<string> {
    const target = known?.target;
    await this.queue.send(
      encodeRelayMessage({
        runId: run.id,
        version: run.version,
        attempt: run.attempt,
        plan: {
          kind: run.kind,
          ...(run.targetId === undefined ? {} : { targetId: run.targetId }),
          asset: run.asset,
          image,
          ...(target === undefined || target.id !== run.targetId ? {} : { target }),
        },
      }),
    );
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

  /** The cancel flag on the run is the signal: the relay reads it for all its runs at once and stops the task. */
  async cancel(): Promise<void> {}

  /** The relay removes its container or process group and work directory when the run ends. */
  async cleanup(): Promise<void> {}
}
