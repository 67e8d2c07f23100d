import { PLAINTEXT_PASSWORD_VARS } from './redaction.ts';
import type { RunKind, Runner, SecretBinding } from './run.ts';
import { type Cloud, type HostingCloud, isHostingCloud, type Target, untargetableReason } from './target.ts';

/**
 * Which runner executes a run, and with which image: the seeds' rules, exactly.
 * Pure and total: every input yields a result, never an exception, so the API
 * (at submit) and the dispatcher (at launch) can both call it and agree.
 */

/** A family's runner for targets in one hosting cloud (`ansible_runner_aws`, `k8s_runner_gcp`, …); unset, the family's own. */
type PerCloudRunnerKey = `${'ansible' | 'k8s'}_runner_${HostingCloud}`;

/** The deployment's resources a cloud backend launches into (see missingBackendKeys); unset, it is not configured. */
type BackendKey =
  | 'ansible_ecs_subnet_id'
  | 'ansible_ecs_execution_role_arn'
  | 'azure_resource_group'
  | 'gcp_project_id'
  | 'gcp_region'
  | 'gcp_ansible_cloud_run_region';

/**
 * The settings resolution reads. Structural, so the domain does not depend on
 * shared/config; the validated `Settings` satisfies it.
 */
export interface RunnerSettings
  extends Readonly<Partial<Record<PerCloudRunnerKey, Runner | undefined>>>,
    Readonly<Partial<Record<BackendKey, string | undefined>>> {
  readonly ansible_runner: Runner;
  readonly ansible_runner_portainer?: Runner | undefined;
  readonly k8s_runner: Runner;
  readonly ansible_local_image: string;
  readonly ansible_cloud_image: string;
  readonly k8s_runner_image: string;
}

export interface RunnerResolutionInput {
  readonly kind: RunKind;
  readonly target?: Target | undefined;
  readonly extraVars: Readonly<Record<string, unknown>>;
  readonly secrets: readonly SecretBinding[];
  /**
   * Variables given as plaintext extra vars and kept as per-run secrets since
   * (Run.ephemeralSecrets): the rule on plaintext passwords still applies to them.
   */
  readonly plaintextVars?: readonly string[] | undefined;
}

export interface RunnerResolutionContext {
  /** Whether a relay (the `local` runner) can take work now. */
  readonly relayAvailable: boolean;
  readonly relayUnavailableReason?: string | undefined;
}

export type RunnerResolution =
  | { readonly ok: true; readonly runner: Runner; readonly image: string }
  | {
      readonly ok: false;
      readonly code: 'runner_not_configured' | 'runner_refused';
      readonly reason: string;
      readonly missingKeys?: string[];
    };

type Refusal = Extract<RunnerResolution, { ok: false }>;

const refuse = (reason: string): Refusal => ({ ok: false, code: 'runner_refused', reason });

/** Where a cloud-hosted endpoint is reachable in-subnet. */
const NATIVE_RUNNER: Record<HostingCloud, Runner> = { aws: 'ecs', azure: 'aci', gcp: 'gcp' };

/** The seeds' backend names, as they appear in "… runner is not configured". */
const BACKEND_NAME: Record<Exclude<Runner, 'local'>, string> = {
  ecs: 'ECS',
  aci: 'ACI',
  gcp: 'Cloud Run',
  kubernetes: 'Kubernetes pod',
};

const TARGET_KIND: Record<Exclude<RunKind, 'portainer'>, Target['kind']> = {
  vm: 'vm',
  k8s_op: 'cluster',
  cluster_play: 'cluster',
  database_play: 'database',
};

const isSet = (value: string | undefined): boolean => value !== undefined && value.trim() !== '';

const perCloud = (settings: RunnerSettings, family: 'ansible' | 'k8s', cloud: Cloud): Runner | undefined => {
  if (!isHostingCloud(cloud)) return undefined;
  return settings[`${family}_runner_${cloud}`];
};

export function resolveRunner(
  input: RunnerResolutionInput,
  settings: RunnerSettings,
  context: RunnerResolutionContext,
): RunnerResolution {
  const { kind, target } = input;

  if (kind === 'portainer') {
    // No resource row and no cloud: the runner is not derived from one.
    if (target !== undefined) {
      return refuse('A portainer run takes no target: it acts on the one configured Portainer connection');
    }
    const runner = settings.ansible_runner_portainer ?? settings.ansible_runner;
    return finish(runner, settings.ansible_local_image, 'Ansible', settings, context);
  }

  if (target === undefined) return refuse(`A ${kind} run needs a target`);
  const untargetable = untargetableReason(target);
  if (untargetable !== undefined) return refuse(untargetable);
  const expected = TARGET_KIND[kind];
  if (target.kind !== expected) {
    return refuse(`A ${kind} run needs a ${expected} target, but ${target.id} is a ${target.kind}`);
  }

  switch (kind) {
    case 'vm':
      return resolveVm(target.cloud, plaintextVarNames(input), settings, context);
    case 'k8s_op':
      return resolveK8sOp(target.cloud, settings, context);
    case 'cluster_play':
    case 'database_play':
      return resolveLocalhostPlay(target.cloud, expected, settings, context);
  }
}

/** Plaintext password variables of a run: still in its extra vars, or already moved to a per-run secret. */
function plaintextVarNames(input: RunnerResolutionInput): readonly string[] {
  const inExtraVars = PLAINTEXT_PASSWORD_VARS.filter((name) => Object.hasOwn(input.extraVars, name));
  return [...inExtraVars, ...(input.plaintextVars ?? [])];
}

function resolveVm(
  cloud: Cloud,
  plaintextVars: readonly string[],
  settings: RunnerSettings,
  context: RunnerResolutionContext,
): RunnerResolution {
  const key = isHostingCloud(cloud) ? `ansible_runner_${cloud}` : 'ansible_runner';
  const runner = perCloud(settings, 'ansible', cloud) ?? settings.ansible_runner;
  if (cloud === 'local' && runner !== 'local') {
    return refuse(
      `Only the local runner can reach on-prem hypervisor VMs, but ${key} resolves to ${runner}: set ${key} to local`,
    );
  }
  if (runner !== 'local') {
    const [leaked] = plaintextVars;
    if (leaked !== undefined) {
      return refuse(
        `The ${runner} runner does not forward a plaintext ${leaked} extra var; only the local runner does. ` +
          `Use a secret: bind ${leaked} to a named secret instead`,
      );
    }
  }
  return finish(runner, settings.ansible_local_image, 'Ansible', settings, context);
}

function resolveK8sOp(
  cloud: Cloud,
  settings: RunnerSettings,
  context: RunnerResolutionContext,
): RunnerResolution {
  // untargetableReason already refuses oci clusters; kept so this rule holds on its own.
  if (cloud === 'oci') return refuse('No runner resolves for oci: OCI-hosted clusters cannot be targeted');
  const runner = perCloud(settings, 'k8s', cloud) ?? settings.k8s_runner;
  if (cloud === 'local' && runner !== 'local') {
    return refuse(
      `An on-prem cluster (cloud local) is reachable only from the relay, but k8s_runner resolves to ${runner}: set k8s_runner to local`,
    );
  }
  return finish(runner, settings.k8s_runner_image, 'Kubernetes', settings, context);
}

/**
 * Cluster and database plays follow line-of-sight to the endpoint: in-subnet on
 * the hosting cloud, on the relay for on-prem, nowhere for oci. The global
 * `ansible_runner` is deliberately not a fallback here.
 */
function resolveLocalhostPlay(
  cloud: Cloud,
  noun: Target['kind'],
  settings: RunnerSettings,
  context: RunnerResolutionContext,
): RunnerResolution {
  if (cloud === 'oci') return refuse(`No runner resolves for oci: OCI-hosted ${noun}s cannot be targeted`);
  if (!isHostingCloud(cloud)) {
    return finish('local', settings.ansible_cloud_image, 'Ansible', settings, context);
  }
  const native = NATIVE_RUNNER[cloud];
  const runner = perCloud(settings, 'ansible', cloud) ?? native;
  if (runner === 'local') {
    return refuse(
      `A ${cloud}-hosted ${noun}'s endpoint is private to its VPC and the local runner's egress cannot reach it: ` +
        `remove the ansible_runner_${cloud}: local override so the run uses ${native} in-subnet`,
    );
  }
  return finish(runner, settings.ansible_cloud_image, 'Ansible', settings, context);
}

/** Checks every resolved runner shares: a reachable relay for local, the shared plumbing for a cloud. */
function finish(
  runner: Runner,
  image: string,
  family: 'Ansible' | 'Kubernetes',
  settings: RunnerSettings,
  context: RunnerResolutionContext,
): RunnerResolution {
  if (runner === 'local') {
    if (!context.relayAvailable) {
      const why = context.relayUnavailableReason;
      return refuse(
        `No relay is reachable to run this on the local runner${why === undefined || why === '' ? '' : `: ${why}`}`,
      );
    }
    return { ok: true, runner, image };
  }
  const missingKeys = missingBackendKeys(runner, settings);
  if (missingKeys.length > 0) {
    return {
      ok: false,
      code: 'runner_not_configured',
      reason: `${family} ${BACKEND_NAME[runner]} runner is not configured: set ${missingKeys.join(', ')}`,
      missingKeys,
    };
  }
  return { ok: true, runner, image };
}

function missingBackendKeys(runner: Exclude<Runner, 'local'>, s: RunnerSettings): string[] {
  switch (runner) {
    case 'ecs':
      return [
        ...(isSet(s.ansible_ecs_subnet_id) ? [] : ['ansible_ecs_subnet_id']),
        ...(isSet(s.ansible_ecs_execution_role_arn) ? [] : ['ansible_ecs_execution_role_arn']),
      ];
    case 'aci':
      return isSet(s.azure_resource_group) ? [] : ['azure_resource_group'];
    case 'gcp':
      return [
        ...(isSet(s.gcp_project_id) ? [] : ['gcp_project_id']),
        // Either region will do; name the general one when neither is set.
        ...(isSet(s.gcp_region) || isSet(s.gcp_ansible_cloud_run_region) ? [] : ['gcp_region']),
      ];
    case 'kubernetes':
      // Namespace and service account have defaults; the API server comes from the kubeconfig or the pod's own.
      return [];
  }
}
