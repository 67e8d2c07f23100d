/**
 * Launch caps: quotas that count what is running rather than how fast it
 * starts (Cloud Run running job executions per project and region, pods in a
 * Kubernetes namespace under a ResourceQuota). A cap of `n` is a set of at
 * most `n` slots per scope, each held by one run from its launch until it
 * ends; a run beyond the cap waits, like a run beyond a launch budget, until a
 * slot frees.
 *
 * @example
 * admits({ holdsOne: false, held: 2 }, 2); // false: the cap is full
 * admits({ holdsOne: true, held: 2 }, 2); // true: the run already holds a slot (a redelivery)
 */

/**
 * Whether a run may hold a slot in a scope where `held` slots are taken: it
 * already holds one (taking again is idempotent), or one is free.
 */
export const admits = (scope: { readonly holdsOne: boolean; readonly held: number }, cap: number): boolean =>
  scope.holdsOne || scope.held < cap;

/** How the waiting reason names each capped backend's quota. */
const CAP_NAMES: Readonly<Record<string, string>> = {
  gcp: 'Cloud Run running executions',
  kubernetes: 'Kubernetes pods per namespace',
};

/** The reason a run shows while it waits for a slot: `waiting: Cloud Run running executions`. */
export const capWaitReason = (backend: string): string =>
  `waiting: ${CAP_NAMES[backend] ?? `${backend} running tasks`}`;

/** A run's reason says it is waiting for a slot under a launch cap. */
export const isCapWaitReason = (reason: string | undefined): boolean =>
  reason?.startsWith('waiting: ') === true &&
  (reason.endsWith(' running tasks') || Object.values(CAP_NAMES).some((n) => reason === `waiting: ${n}`));

/**
 * Slots to let go of: those held by runs that have ended or no longer exist
 * (a crash between a run's end and its release). `activeRunIds` are runs
 * known to be active; the others are `candidates` for the caller to confirm.
 */
export const unconfirmedHolders = (
  holders: readonly string[],
  activeRunIds: ReadonlySet<string>,
): readonly string[] => holders.filter((id) => !activeRunIds.has(id));
