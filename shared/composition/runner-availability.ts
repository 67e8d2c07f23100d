import { type AciSettings, aciOptionsFromSettings } from '../adapters/aci/config.ts';
import { type CloudRunSettings, cloudRunOptionsFromSettings } from '../adapters/cloud-run/config.ts';
import { type EcsNetwork, ecsNetworkFromSettings } from '../adapters/ecs/config.ts';
import type { Settings } from '../config/settings.ts';
import { LauncherUnavailableError, RunnerNotConfiguredError } from '../domain/errors.ts';
import type { Runner } from '../domain/run.ts';
import type { Launcher, Launchers } from '../ports/launcher.ts';

/*
 * Which in-cloud runners this deployment has, from its settings alone: no
 * SDK, no client, no adapter that calls a backend. The launcher build
 * (launchers.ts) starts from these checks; the submits (lambda/submit-deps.ts)
 * need nothing more, since planning a run only asks whether a launcher for
 * its runner exists.
 */

export type CloudRunner = Exclude<Runner, 'local'>;

/** A backend's options read from the settings, or why this deployment does not have it. */
export type Readiness<T> = { readonly options: T } | { readonly unavailable: string };

/** The task definitions a mode runs ECS tasks from (EcsRunnerConfig's, launchers.ts). */
export interface EcsDefinitions {
  readonly taskDefinitions: Readonly<Record<string, string>>;
  /** The variable or setting holding them, named when there are none. */
  readonly taskDefinitionsKey: string;
}

export function ecsReadiness(
  settings: Settings,
  ecs: EcsDefinitions,
): Readiness<{ readonly cluster: string; readonly network: EcsNetwork }> {
  const cluster = settings.ansible_ecs_cluster;
  const network = ecsNetworkFromSettings(settings);
  const missing = [
    ...(cluster === undefined ? ['ansible_ecs_cluster'] : []),
    ...(network === undefined ? ['ansible_ecs_subnet_id'] : []),
    ...(Object.keys(ecs.taskDefinitions).length === 0 ? [ecs.taskDefinitionsKey] : []),
  ];
  if (cluster === undefined || network === undefined || missing.length > 0) {
    return { unavailable: `ECS is not configured in this deployment (${missing.join(', ')} not set)` };
  }
  return { options: { cluster, network } };
}

export function aciReadiness(settings: Settings): Readiness<AciSettings> {
  const read = configured(() => aciOptionsFromSettings(settings));
  if ('unavailable' in read) return read;
  return read.options === undefined
    ? { unavailable: 'ACI is not configured in this deployment (azure_resource_group not set)' }
    : { options: read.options };
}

/** Lambda is never in a cluster: kubernetes_kubeconfig must name a kubeconfig file (token or certificate, no exec). */
export function kubernetesReadiness(settings: Settings): Readiness<{ readonly kubeconfig: string }> {
  const kubeconfig = settings.kubernetes_kubeconfig;
  return kubeconfig === undefined
    ? {
        unavailable:
          'Kubernetes pod runner is not configured: set kubernetes_kubeconfig (the control plane is not running in a cluster)',
      }
    : { options: { kubeconfig } };
}

export const gcpReadiness = (settings: Settings): Readiness<CloudRunSettings> =>
  configured(() => cloudRunOptionsFromSettings(settings));

/**
 * The in-cloud runners whose settings are complete, and why each other one
 * is missing.
 *
 * @example
 * cloudRunnerAvailability(settings, { taskDefinitions: {}, taskDefinitionsKey: 'ECS_TASK_DEFINITIONS' })
 * // { available: [], unavailable: { ecs: 'ECS is not configured … (…, ECS_TASK_DEFINITIONS not set)', … } }
 */
export function cloudRunnerAvailability(
  settings: Settings,
  ecs: EcsDefinitions,
): { readonly available: readonly CloudRunner[]; readonly unavailable: Partial<Record<Runner, string>> } {
  const checks: Record<CloudRunner, Readiness<unknown>> = {
    ecs: ecsReadiness(settings, ecs),
    aci: aciReadiness(settings),
    kubernetes: kubernetesReadiness(settings),
    gcp: gcpReadiness(settings),
  };
  const available: CloudRunner[] = [];
  const unavailable: Partial<Record<Runner, string>> = {};
  for (const [runner, check] of Object.entries(checks) as [CloudRunner, Readiness<unknown>][]) {
    if ('unavailable' in check) unavailable[runner] = check.unavailable;
    else available.push(runner);
  }
  return { available, unavailable };
}

/**
 * Launchers for a function that plans runs but never launches one (the
 * submits): one entry per available runner, so planning accepts exactly the
 * runs the dispatcher can launch, each refusing any call with
 * LauncherUnavailableError. Nothing but the dispatcher, the poller, the
 * reconciler and the task-reading routes acts on a task.
 */
export function planningLaunchers(runners: readonly Runner[], fn: string): Launchers {
  const launchers: Partial<Record<Runner, Launcher>> = {};
  for (const backend of runners) {
    const refuse = (): Promise<never> =>
      Promise.reject(
        new LauncherUnavailableError(
          `${fn} plans ${backend} runs but does not act on tasks; the dispatcher does`,
        ),
      );
    launchers[backend] = {
      backend,
      launch: refuse,
      status: refuse,
      logs: refuse,
      cancel: refuse,
      cleanup: refuse,
    };
  }
  return launchers;
}

/** A backend's options read from the settings, or the RunnerNotConfiguredError's message as `unavailable`. */
function configured<T>(read: () => T): Readiness<T> {
  try {
    return { options: read() };
  } catch (error) {
    if (error instanceof RunnerNotConfiguredError) return { unavailable: error.message };
    throw error;
  }
}

/** Why a deployment without RELAY_QUEUE_URL refuses relay runs. */
export const NO_RELAY_REASON = 'this deployment has no on-prem relay (RELAY_QUEUE_URL is not set)';
