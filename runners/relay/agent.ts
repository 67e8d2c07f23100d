import { mkdir } from 'node:fs/promises';
import { endRun } from '../../shared/app/credentials.ts';
import { settleRun } from '../../shared/app/run-updates.ts';
import { troubledReason } from '../../shared/app/trouble-reason.ts';
import { DomainError } from '../../shared/domain/errors.ts';
import { claimForRelay, relayClaimable } from '../../shared/domain/relay-claim.ts';
import {
  isTerminal,
  RELAY_OWNER_PREFIX,
  type Run,
  type RunState,
  transition,
} from '../../shared/domain/run.ts';
import { decodeRelayMessage, type RelayMessage, type RelayPlan } from '../../shared/domain/run-message.ts';
import { SHIM_PREFIX } from '../../shared/domain/shim-protocol.ts';
import { detectTrouble } from '../../shared/domain/troubleshooting.ts';
import { KeyedLock } from '../../shared/lib/keyed-lock.ts';
import { sleep } from '../../shared/lib/sleep.ts';
import type { RunningExecution } from '../../shared/ports/executor.ts';
import type { PreparedTask } from '../../shared/ports/launcher.ts';
import type { QueueMessage } from '../../shared/ports/work-queue.ts';
import type { RelayAgentOptions } from './agent-options.ts';
import { CancelWatch } from './cancel-watch.ts';
import { type EarlyLookups, lookEarly } from './early-lookups.ts';
import { LogShipper } from './log-shipper.ts';
import {
  existingWorkDir,
  prepareFresh,
  type StartedTask,
  type StartOptions,
  startOrResume,
  workDirOf,
} from './task-start.ts';
import { watchTask } from './task-watch.ts';
import { SpareWorkDirs } from './work-dirs.ts';

interface Active {
  readonly runId: string;
  receipt: string | undefined;
  readonly done: Promise<void>;
}

/** What handling a run ends with: the run as last written, when the handler knows it (else it is read). */
type Handled = Run | undefined;

/** The part of the run's launch handle that belongs to the relay: `relay:<relayId>/<executor handle>`. */
const relayHandle = (relayId: string, execHandle: string) => `relay:${relayId}/${execHandle}`;
const execHandleOf = (relayId: string, handle: string | undefined): string | undefined => {
  const prefix = `relay:${relayId}/`;
  return handle?.startsWith(prefix) ? handle.slice(prefix.length) : undefined;
};

/**
 * The relay: long-polls its queue, claims runs with one conditional write
 * that answers the run (RunStore.claimRelayRun, from the version the message
 * carries; nothing waits for the dispatcher's `launched` write), executes
 * them through an Executor, ships redacted output to the LogStore, honours
 * cancel (one read for all its running runs, cancel-watch.ts) and the run's
 * deadline, and settles each run exactly once. A message in the old shape
 * (run id only) is handled by reading the run first.
 * On start it adopts the tasks it left running and reaps any it does not know.
 * Runs in-process in local mode and as the on-prem agent in AWS mode.
 *
 * @example
 * const agent = new RelayAgent({ id: 'relay-1', store, queue, logs, executor, … });
 * await agent.start();
 * process.on('SIGTERM', () => agent.stop(30_000));
 */
export class RelayAgent {
  private readonly active = new Map<string, Active>();
  private freed: (() => void) | undefined;
  private running = false;
  private loop: Promise<void> | undefined;
  private readonly owner: string;
  private readonly concurrency: number;
  private readonly visibility: number;
  private readonly cancels: CancelWatch;
  /** Messages being handled (decoded, claimed) and not yet tracked or let go. */
  private readonly handling = new Set<Promise<void>>();
  private readonly perRun = new KeyedLock();
  /** Work dirs of ended runs being removed (supervise): a run's slot does not wait for them, stop does. */
  private readonly removals = new Set<Promise<void>>();
  /** Ended runs' work dirs, emptied for the next runs (work-dirs.ts). */
  private readonly spares: SpareWorkDirs;

  constructor(private readonly o: RelayAgentOptions) {
    this.owner = `${RELAY_OWNER_PREFIX}${o.id}`;
    this.concurrency = o.concurrency ?? 3;
    this.visibility = o.visibilityTimeoutSeconds ?? 60;
    this.cancels = new CancelWatch(o.store, o.cancelPollMs ?? 1000, o.logger);
    this.spares = new SpareWorkDirs(o.workRoot, this.concurrency);
  }

  /** Runs currently executing here. */
  get activeRunIds(): readonly string[] {
    return [...this.active.keys()];
  }

  async start(): Promise<void> {
    await mkdir(this.o.workRoot, { recursive: true, mode: 0o700 });
    await this.spares.clear();
    await this.recover();
    this.running = true;
    this.loop = this.pollLoop();
  }

  /** Stop taking work; wait up to `drainMs` for executing runs. Runs still going are left to be adopted on the next start. */
  async stop(drainMs = 30_000): Promise<void> {
    this.running = false;
    await this.loop;
    await Promise.all(this.handling); // claims in flight: each ends tracked (below) or handed back
    const all = Promise.all([...this.active.values()].map((a) => a.done));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([all, new Promise<void>((resolve) => (timer = setTimeout(resolve, drainMs)))]);
    clearTimeout(timer);
    await Promise.all(this.removals);
    await this.spares.clear();
  }

  /** Adopt runs this relay was executing before a restart; reap tasks nobody owns. */
  private async recover(): Promise<void> {
    const keep = new Set<string>();
    for (const run of await this.o.store.listActiveRuns(1000)) {
      if (run.owner !== this.owner) continue;
      // Claimed but not yet recorded running: a task may have started just before the crash. Its
      // redelivered message resumes it (claimAndExecute); reaping it here would run the play twice.
      if (run.state === 'launched') keep.add(run.id);
      const exec = execHandleOf(this.o.id, run.launch?.handle);
      if (run.state !== 'running' || exec === undefined) continue;
      keep.add(run.id);
      this.track(run.id, undefined, () => this.adoptAndFinish(run, exec));
    }
    const reaped = await this.o.executor.reapOrphans(keep);
    if (reaped.length > 0) this.o.logger.warn('relay reaped orphaned tasks', { runIds: reaped });
  }

  private async pollLoop(): Promise<void> {
    while (this.running) {
      const room = this.concurrency - this.active.size - this.handling.size;
      if (room <= 0) {
        await this.slotFreed();
        continue;
      }
      let messages: readonly QueueMessage[];
      try {
        messages = await this.o.queue.receive({
          max: Math.min(room, 10),
          waitSeconds: this.o.pollWaitSeconds ?? 20,
          visibilityTimeoutSeconds: this.visibility,
        });
      } catch (error) {
        this.o.logger.error('relay: receive failed; retrying', { error: error as Error });
        await sleep(1000);
        continue;
      }
      if (!this.running) {
        // Stopped during the long poll: hand these back at once rather than start new work.
        for (const m of messages) await this.o.queue.changeVisibility(m.receiptHandle, 0).catch(() => {});
        break;
      }
      // The messages of one receive are claimed side by side; the next long poll opens once they are
      // answered (not when their runs end), so on one shared endpoint its request does not compete
      // with the claims on their way to the start.
      await Promise.all(messages.map((message) => this.handle(message)));
    }
  }

  /**
   * Handle one message up to its run being tracked (or the message let go); two messages for
   * one run are handled one after the other, so the second finds the first's run tracked.
   */
  private handle(message: QueueMessage): Promise<void> {
    const decoded = decodeRelayMessage(message.body);
    const handled = this.perRun
      .run(decoded?.runId ?? message.id, () => this.onMessage(message, decoded))
      // A store error leaves the message where it is: it comes back when its visibility ends.
      .catch((error: unknown) =>
        this.o.logger.error('relay: message handling failed; it will be delivered again', {
          messageId: message.id,
          error: error as Error,
        }),
      )
      .finally(() => {
        this.handling.delete(handled);
        this.wake();
      });
    this.handling.add(handled);
    return handled;
  }

  private async onMessage(message: QueueMessage, decoded: RelayMessage | undefined): Promise<void> {
    if (decoded === undefined) {
      this.o.logger.error('relay: poison message dropped', { messageId: message.id });
      await this.o.queue.delete(message.receiptHandle);
      return;
    }
    const { runId } = decoded;
    const tracked = this.active.get(runId);
    if (tracked !== undefined) {
      tracked.receipt = message.receiptHandle; // a redelivery of what we are already running
      return;
    }
    let run: Run | undefined;
    if (decoded.version === undefined) {
      run = await this.o.store.getRun(runId); // the old shape: no version to claim from
    } else {
      const early = lookEarly(this.o, decoded.plan);
      let prepared: Promise<PreparedTask> | undefined;
      const claim = await this.o.store.claimRelayRun(runId, {
        owner: this.owner,
        at: this.now(),
        sentVersion: decoded.version,
        onCommitted: (claimed) => {
          prepared = this.prepareAhead(claimed, decoded.plan, early);
        },
      });
      if (claim.claimed) {
        const claimed = claim.run;
        this.track(runId, message.receiptHandle, () =>
          this.execute(claimed, decoded.plan, {
            freshClaim: true,
            early,
            ...(prepared === undefined ? {} : { prepared }),
          }),
        );
        return;
      }
      run = claim.run; // not the record the message was sent for: decide from what is stored
    }
    if (run === undefined || isTerminal(run.state)) {
      await this.o.queue.delete(message.receiptHandle);
      return;
    }
    const exec = execHandleOf(this.o.id, run.launch?.handle);
    if (run.state === 'running' && run.owner === this.owner && exec !== undefined) {
      this.track(runId, message.receiptHandle, () => this.adoptAndFinish(run, exec));
      return;
    }
    if (run.state === 'running' && run.owner !== this.owner) {
      // Another relay holds it; the reconciler settles it if that relay is gone for good.
      await this.o.queue.changeVisibility(message.receiptHandle, 300);
      return;
    }
    if (run.state === 'running') {
      await this.o.queue.changeVisibility(message.receiptHandle, 30); // ours in name only: no task to adopt yet
      return;
    }
    const known = run;
    this.track(runId, message.receiptHandle, () => this.claimAndExecute(known, decoded.plan));
  }

  /**
   * The task of a claim just committed, prepared in its work dir while the
   * claim is made durable (prepareFresh): the preparation begins once the
   * turn that committed the claim is over, so the fsync it waits for is
   * under way first; the task starts only once the claim resolves
   * (execute). None for a run with a cancel request: it is settled, not started.
   */
  private prepareAhead(
    claimed: Run,
    plan: RelayPlan | undefined,
    early: EarlyLookups,
  ): Promise<PreparedTask> | undefined {
    if (claimed.cancelRequested) return undefined;
    const prepared = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      prepareFresh(this.o, claimed, {
        ...(plan?.target === undefined ? {} : { target: plan.target }),
        early,
        spares: this.spares,
      }),
    );
    prepared.catch(() => {}); // surfaces in execute; unawaited only when the claim itself fails
    return prepared;
  }

  /** Tell a poll loop waiting for room that some may have freed up. */
  private wake(): void {
    this.freed?.();
    this.freed = undefined;
  }

  /** Resolves when a run finishes or a message's handling ends (or after a second, so a stop request is noticed). */
  private slotFreed(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 1000);
      this.freed = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private track(runId: string, receipt: string | undefined, work: () => Promise<Handled>): void {
    const entry: Active = { runId, receipt, done: Promise.resolve() };
    this.active.set(runId, entry);
    const heartbeat = setInterval(
      () => {
        if (entry.receipt !== undefined) {
          this.o.queue.changeVisibility(entry.receipt, this.visibility).catch(() => {});
        }
      },
      (this.visibility * 1000) / 3,
    );
    (entry as { done: Promise<void> }).done = work()
      .catch((error: unknown): Handled => {
        this.o.logger.error('relay: run handling failed', { runId, error: error as Error });
        return undefined;
      })
      .then(async (handled) => {
        clearInterval(heartbeat);
        this.active.delete(runId);
        this.wake();
        const run = handled ?? (await this.o.store.getRun(runId).catch(() => undefined));
        // Only a settled run's message is deleted: anything else comes back and is picked up again.
        if (entry.receipt !== undefined && (run === undefined || isTerminal(run.state))) {
          await this.o.queue.delete(entry.receipt).catch(() => {});
        }
      });
  }

  private now = () => this.o.clock.now();

  /**
   * The claim from a run as read (an old-shape message, or one whose record
   * has moved on since it was sent): a conditional write from what is known.
   * Never takes a run another relay has claimed; a run this relay claimed
   * before a restart is resumed (startOrResume).
   */
  private async claimAndExecute(known: Run, plan: RelayPlan | undefined): Promise<Handled> {
    const run = await settleRun(
      this.o.store,
      known.id,
      (r) => (relayClaimable(r) ? claimForRelay(r, this.owner, this.now()) : r),
      known,
    );
    if (run.state !== 'launched' || run.owner !== this.owner) return run;
    return this.execute(run, plan);
  }

  /** Start (or resume) the task of a run this relay has claimed, record it running, and see it to its end. */
  private async execute(
    claimed: Run,
    plan: RelayPlan | undefined,
    known: Pick<StartOptions, 'freshClaim' | 'early' | 'prepared'> = {},
  ): Promise<Handled> {
    const runId = claimed.id;
    let run = claimed;
    if (run.cancelRequested) return this.settle(runId, 'cancelled', 'Cancelled before it started');

    const shipper = new LogShipper(this.o.logs, runId).watchFor(run.kind);
    let started: StartedTask;
    try {
      started = await startOrResume(this.o, run, shipper, {
        ...(plan?.target === undefined ? {} : { target: plan.target }),
        ...known,
        spares: this.spares,
      });
    } catch (error) {
      const what = error instanceof DomainError ? error.message : 'The relay could not start the task';
      const trouble = detectTrouble(what, run.kind);
      const reason = trouble === undefined ? what : await troubledReason(this.o, run, trouble, what);
      if (!(error instanceof DomainError))
        this.o.logger.error('relay: start failed', { runId, error: error as Error });
      shipper.system(`${SHIM_PREFIX}${reason}`);
      await shipper.close().catch(() => {});
      return this.settle(runId, 'failed', reason);
    }
    const { execution, workDir } = started;
    run = await settleRun(
      this.o.store,
      runId,
      (r) =>
        r.state === 'launched'
          ? transition(r, 'running', this.now(), {
              patch: {
                launch: {
                  backend: 'local',
                  intentAt: r.launch?.intentAt ?? this.now(),
                  handle: relayHandle(this.o.id, execution.handle),
                },
              },
            })
          : r,
      run,
    );
    return this.supervise(run, execution, shipper, workDir);
  }

  private async adoptAndFinish(run: Run, execHandle: string): Promise<Handled> {
    const shipper = new LogShipper(this.o.logs, run.id).watchFor(run.kind);
    const workDir = (await existingWorkDir(this.o.workRoot, run)) ?? workDirOf(this.o.workRoot, run);
    const execution = await this.o.executor.adopt(execHandle, workDir, (lines) => shipper.push(lines));
    shipper.system(`${SHIM_PREFIX}relay ${this.o.id} restarted and adopted this run`);
    return this.supervise(run, execution, shipper, workDir);
  }

  /** Watch for cancel and the deadline until the task ends, then settle the run once. */
  private async supervise(
    run: Run,
    execution: RunningExecution,
    shipper: LogShipper,
    workDir: string,
  ): Promise<Handled> {
    const { state, reason: what, exitCode } = await watchTask(this.o, run, execution, shipper, this.cancels);
    const trouble = state === 'failed' ? shipper.trouble : undefined;
    const reason =
      trouble === undefined || what === undefined ? what : await troubledReason(this.o, run, trouble, what);
    shipper.system(`${SHIM_PREFIX}${state}${reason === undefined ? '' : ` (${reason})`}`);
    await shipper.close();
    const ended = await this.settle(run.id, state, reason, exitCode);
    this.removeWorkDir(workDir);
    return ended;
  }

  /**
   * Empty an ended run's work dir and keep it for a next run, or remove it
   * (work-dirs.ts; a handful of thread-pool round trips, more for a large
   * dir) without holding the run's slot meanwhile: the run is settled, in a
   * terminal state no attempt of it starts from again, so nothing uses the
   * dir any more.
   */
  private removeWorkDir(workDir: string): void {
    const removal: Promise<void> = this.spares.give(workDir).finally(() => this.removals.delete(removal));
    this.removals.add(removal);
  }

  /**
   * End the run once, after letting go of what it holds (its checkout, its
   * account hold, its per-run secrets): whoever sees the run ended sees the
   * account checked in.
   */
  private async settle(runId: string, state: RunState, reason?: string, exitCode?: number): Promise<Run> {
    return endRun(this.o, runId, (r) =>
      transition(r, state, this.now(), {
        ...(reason === undefined ? {} : { reason }),
        ...(exitCode === undefined ? {} : { patch: { exitCode } }),
      }),
    );
  }
}
