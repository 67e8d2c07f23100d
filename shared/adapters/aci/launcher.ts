import type { ContainerGroup } from '@azure/arm-containerinstance';
import { DomainError, LauncherUnavailableError, LaunchRejectedError } from '../../domain/errors.ts';
import { isTerminal, type Run } from '../../domain/run.ts';
import { type Clock, systemClock } from '../../ports/clock.ts';
import type { BackendStatus, Launcher, LaunchRequest } from '../../ports/launcher.ts';
import { LOG_PAGE_DEFAULT_LINES, type LogPage, logPageSize } from '../../ports/log-store.ts';
import { launchOrAdopt } from '../launch-or-adopt.ts';
import type { AciLauncherOptions } from './config.ts';
import { containerGroupFor } from './container-group.ts';
import { aciError, isNotFound, isResourceGroupMissing, statusOf } from './errors.ts';
import { type AciHandle, containerGroupName, formatAciHandle, parseAciHandle } from './handle.ts';
import { linesToArchive, pageFrom, parseAciLog, type SourceLine } from './log-cursor.ts';
import { describeContainerGroup } from './outcome.ts';

/** Lines read from the archive per call while collecting it. */
const ARCHIVE_PAGE = 1000;

/**
 * The `aci` runner: one Azure Container Instances container group per run
 * and attempt, named `rw-<runId>-<attempt>`, `restartPolicy: Never`, one
 * Linux container running the runner image with the task shim as entrypoint.
 *
 * Idempotent under redelivery, and never a second run of a finished task: a
 * create request (PUT) on a group that exists deploys it again, even after
 * it terminated. So `launch` first GETs the group and adopts it whatever its
 * state; only a 404 leads to the PUT. (Two launches of the same attempt racing
 * past the GET could both PUT; the dispatcher's claim on the run prevents it.)
 * `launch` returns once ARM accepted the PUT, without waiting for the
 * deployment: `status` reports it.
 *
 * Secrets: every `PreparedTask.secretEnv` value travels only as a
 * `secureValue` environment variable, which ARM never returns; the registry
 * password only in `imageRegistryCredentials`. Neither is kept in an error:
 * messages scrub them and the SDK's error (whose request holds the body) is
 * never the `cause`. `RW_TASK` (the secret-free spec) and `RW_RUN_ID` are plain.
 *
 * Throttling and 5xx: the SDK retries them itself (5xx with exponential
 * backoff, 429/503 when ARM sends `Retry-After`, which it does for
 * throttling), configured through the client's `retryOptions`; what still
 * fails becomes LauncherUnavailableError for the dispatcher or poller to
 * retry later. So shared/adapters/retry.ts is not layered on top.
 *
 * Logs: ACI keeps the container's output and answers it whole on each
 * `listLogs`; see log-cursor.ts for the line cursor over that snapshot and its
 * limit (about the last 1,000 lines of a finished container). `cleanup` (and
 * `cancel`) copy what the archive lacks into it before deleting the group;
 * after that `logs` pages the archive with the same cursor.
 *
 * @example
 * const aci = aciOptionsFromSettings(settings)!;
 * const launcher = new AciLauncher({
 *   aci: new ContainerInstanceManagementClient(new DefaultAzureCredential(), aci.subscriptionId),
 *   resourceGroup: aci.resourceGroup, location: aci.location, subnetIds: aci.subnetIds,
 *   prepare: (run) => prepareTask({ store, assets, secrets }, run), archive: logStore,
 * });
 * const handle = await launcher.launch({ run, image: 'chrweav/ansible-cloud' }); // 'aci:rg-runs/rw-01jd…-1'
 */
export class AciLauncher implements Launcher {
  readonly backend = 'aci' as const;
  readonly #o: AciLauncherOptions;
  readonly #container: string;
  readonly #clock: Clock;

  constructor(options: AciLauncherOptions) {
    this.#o = options;
    this.#container = options.containerName ?? 'runner';
    this.#clock = options.clock ?? systemClock;
  }

  launch({ run, image }: LaunchRequest): Promise<string> {
    const resourceGroup = this.#o.resourceGroup;
    const handleOf = (containerGroup: string) => formatAciHandle({ resourceGroup, containerGroup });
    return launchOrAdopt(run, {
      resource: 'an ACI container group',
      nameFor: containerGroupName,
      // Adopt whatever exists, in any state: a PUT would deploy a finished group again.
      adopt: async (name) => ((await this.#exists(name)) ? handleOf(name) : undefined),
      start: async (name) => {
        await this.#create(run, image, name);
        return handleOf(name);
      },
    });
  }

  async #exists(name: string): Promise<boolean> {
    const resourceGroup = this.#o.resourceGroup;
    try {
      await this.#o.aci.containerGroups.get(resourceGroup, name);
      return true;
    } catch (error) {
      if (!isNotFound(error) || isResourceGroupMissing(error)) {
        throw aciError(error, `get container group ${name} in ${resourceGroup}`);
      }
      return false;
    }
  }

  /** The PUT, returning once ARM accepted it. */
  async #create(run: Run, image: string, name: string): Promise<void> {
    const resourceGroup = this.#o.resourceGroup;
    const prepared = await this.#o.prepare(run);
    const password = await this.#registryPassword();
    const secrets = [...Object.values(prepared.secretEnv), ...(password === undefined ? [] : [password])];
    const group = containerGroupFor(this.#o, this.#container, run, image, prepared, password);
    try {
      await this.#o.aci.containerGroups.beginCreateOrUpdate(resourceGroup, name, group, this.#lro());
    } catch (error) {
      throw aciError(error, `create container group ${name} in ${resourceGroup}`, secrets);
    }
  }

  async status(handle: string, _run?: Run): Promise<BackendStatus> {
    const h = this.#parse(handle);
    let group: ContainerGroup;
    try {
      group = await this.#o.aci.containerGroups.get(h.resourceGroup, h.containerGroup);
    } catch (error) {
      if (isNotFound(error)) {
        return {
          state: 'missing',
          reason: `ACI has no container group ${h.containerGroup} in resource group ${h.resourceGroup}${
            isResourceGroupMissing(error) ? ' (the resource group does not exist)' : ''
          }; it was deleted or never created`,
        };
      }
      throw aciError(error, `get container group ${h.containerGroup}`);
    }
    return describeContainerGroup(group, this.#container);
  }

  /**
   * The run's output after `cursor`: from the live container while the group
   * exists, from the archive once it has been deleted. The last line is held
   * back while it may still grow (no newline yet), unless the run has ended.
   */
  async logs(handle: string, run: Run, cursor?: string, limit?: number): Promise<LogPage> {
    const h = this.#parse(handle);
    const size = logPageSize(limit) ?? LOG_PAGE_DEFAULT_LINES;
    const content = await this.#liveLog(h);
    if (content === undefined) return pageFrom(await this.#archived(run.id), cursor, size);
    return pageFrom(
      parseAciLog(content, { includeOpenLine: isTerminal(run.state), now: this.#clock.now() }),
      cursor,
      size,
    );
  }

  /**
   * Stop the group, keep its output, delete it. ACI's stop ends the
   * containers at once, with no per-call grace, so `graceSeconds` is not
   * used. Output is archived before the stop too, in case a stopped group no
   * longer answers for its logs. Already gone = done. After this `status`
   * answers `missing`.
   */
  async cancel(handle: string, run: Run, _graceSeconds: number): Promise<void> {
    const h = this.#parse(handle);
    await this.#archive(h, run, false).catch(() => {});
    try {
      await this.#o.aci.containerGroups.stop(h.resourceGroup, h.containerGroup);
    } catch (error) {
      if (!isNotFound(error)) throw aciError(error, `stop container group ${h.containerGroup}`);
    }
    await this.#archiveAndDelete(h, run);
  }

  /** Archive what the archive lacks, then delete the group. Idempotent; already gone = done. */
  async cleanup(handle: string, run: Run): Promise<void> {
    await this.#archiveAndDelete(this.#parse(handle), run);
  }

  async #archiveAndDelete(h: AciHandle, run: Run): Promise<void> {
    // A transient failure here throws before the delete: deleting would lose the output for good.
    await this.#archive(h, run, true);
    try {
      // ARM accepted the delete: it completes on its own; a second cleanup finds nothing to do.
      await this.#o.aci.containerGroups.beginDelete(h.resourceGroup, h.containerGroup, this.#lro());
    } catch (error) {
      if (!isNotFound(error)) throw aciError(error, `delete container group ${h.containerGroup}`);
    }
  }

  /** Copy the lines of the live log that the archive does not hold yet. */
  async #archive(h: AciHandle, run: Run, includeOpenLine: boolean): Promise<void> {
    const content = await this.#liveLog(h);
    if (content === undefined) return;
    const snapshot = parseAciLog(content, { includeOpenLine, now: this.#clock.now() });
    const fresh = linesToArchive(await this.#archived(run.id), snapshot);
    if (fresh.length > 0) await this.#o.archive.append(run.id, fresh);
  }

  /**
   * The container's whole log text, or undefined when ACI has none to give:
   * the group is gone (404) or its container has not started (400).
   */
  async #liveLog(h: AciHandle): Promise<string | undefined> {
    try {
      const { content } = await this.#o.aci.containers.listLogs(
        h.resourceGroup,
        h.containerGroup,
        this.#container,
        {
          timestamps: true,
        },
      );
      return content ?? '';
    } catch (error) {
      const status = statusOf(error);
      if (status === 404 || status === 400) return undefined;
      throw aciError(error, `list logs of container group ${h.containerGroup}`);
    }
  }

  async #archived(runId: string): Promise<SourceLine[]> {
    const lines: SourceLine[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.#o.archive.read(runId, {
        limit: ARCHIVE_PAGE,
        ...(cursor === undefined ? {} : { cursor }),
      });
      for (const l of page.lines) lines.push({ stream: l.stream, text: l.text, at: l.at });
      if (page.lines.length === 0 || page.nextCursor === cursor) return lines;
      cursor = page.nextCursor;
    }
  }

  async #registryPassword(): Promise<string | undefined> {
    const password = this.#o.registry?.password;
    if (password === undefined || typeof password === 'string') return password;
    try {
      return await password();
    } catch (error) {
      if (error instanceof DomainError) throw error;
      throw new LauncherUnavailableError(
        'The ACI registry password (ansible_aci_acr_password_secret) could not be read',
        {
          cause: error,
        },
      );
    }
  }

  #lro(): { updateIntervalInMs?: number } {
    return this.#o.pollIntervalMs === undefined ? {} : { updateIntervalInMs: this.#o.pollIntervalMs };
  }

  #parse(handle: string): AciHandle {
    const h = parseAciHandle(handle);
    if (h === undefined) throw new LaunchRejectedError(`Not an ACI launch handle: ${handle}`);
    return h;
  }
}
