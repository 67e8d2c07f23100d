import { isHypervisor } from '../../shared/domain/hypervisors.ts';
import type { Run } from '../../shared/domain/run.ts';
import type { RelayPlan } from '../../shared/domain/run-message.ts';
import type { Target } from '../../shared/domain/target.ts';
import type { SecretSource } from '../../shared/ports/secret-source.ts';
import type { TargetStore } from '../../shared/ports/target-store.ts';
import type { RelayAgentOptions } from './agent-options.ts';

/** Look-ups the relay asked for before their answer was needed. */
export interface EarlyLookups {
  readonly target?: { readonly id: string; readonly at: Promise<Target | undefined> };
}

/** A promise nobody may end up awaiting (a claim that loses): its rejection is not unhandled. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/**
 * What a relay message's plan lets the relay look up beside its claim
 * rather than after it: a read with no effect, so a claim that loses has
 * cost at most a read. The target, when dispatch did not pass it; a
 * failure surfaces when the task is prepared, as it would have there.
 *
 * Not the asset: where runs read assets as files on this host, locating one
 * is a few synchronous metadata calls (shared/adapters/local/asset-store.ts),
 * which would run before the claim is sent rather than beside it. The task's
 * preparation locates it, and in local mode that runs while the claim's fsync
 * does (RelayAgent prepareAhead): off the path to the start.
 *
 * @example
 * const early = lookEarly(options, message.plan);
 * const claim = await store.claimRelayRun(…);
 * await startOrResume(options, claim.run, shipper, workDir, { freshClaim: true, early });
 */
export function lookEarly(o: RelayAgentOptions, plan: RelayPlan | undefined): EarlyLookups {
  const id = plan?.targetId;
  const readTarget = id !== undefined && plan?.target === undefined && !isHypervisor(id);
  return readTarget ? { target: { id, at: quiet(o.targets.getTarget(id)) } } : {};
}

/**
 * The agent's dependencies for preparing `run`, answering from what is
 * known: the plan's target, the early look-up, and the run's secret
 * bindings read side by side (prepareTask asks for them one at a time).
 */
export function withKnown(
  o: RelayAgentOptions,
  run: Run,
  known: { readonly target?: Target; readonly early?: EarlyLookups },
): RelayAgentOptions {
  const early = known.early ?? {};
  const target =
    known.target === undefined ? early.target : { id: known.target.id, at: Promise.resolve(known.target) };
  return {
    ...o,
    targets: target === undefined ? o.targets : knownTarget(o.targets, target),
    secrets: readAtOnce(
      o.secrets,
      run.secrets.map((b) => b.secret),
    ),
  };
}

/** The registry, with one target already asked for: asked for that id, it answers that. */
const knownTarget = (targets: TargetStore, known: NonNullable<EarlyLookups['target']>): TargetStore => ({
  getTarget: (id) => (id === known.id ? known.at : targets.getTarget(id)),
  putTarget: (t) => targets.putTarget(t),
  listTargets: () => targets.listTargets(),
  deleteTarget: (id) => targets.deleteTarget(id),
});

/** The secret source, with `names` all asked for at once; each answer is handed out when asked. */
function readAtOnce(secrets: SecretSource, names: readonly string[]): SecretSource {
  if (new Set(names).size < 2) return secrets;
  const asked = new Map(names.map((name) => [name, quiet(secrets.get(name))]));
  return { get: (name) => asked.get(name) ?? secrets.get(name) };
}
