/**
 * What a run does; one kind per batch. Its own module, free of any schema
 * library, so the task shim's bundle can name the kinds without carrying the
 * API's zod schemas (run.ts) along.
 */
export const RUN_KINDS = ['vm', 'cluster_play', 'database_play', 'k8s_op', 'portainer'] as const;
export type RunKind = (typeof RUN_KINDS)[number];
