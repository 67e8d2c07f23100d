import { RETRYABLE_STATES } from '../domain/batch.ts';
import { K8sOperationSchema, RUN_KINDS, RUN_STATES, RUNNERS, SecretBindingSchema } from '../domain/run.ts';
import {
  ClusterTargetSchema,
  DatabaseTargetSchema,
  TargetIdSchema,
  VirtualDesktopTargetSchema,
  VmTargetSchema,
} from '../domain/target.ts';
import * as z from '../lib/zod.ts';

/**
 * What the API answers, as zod schemas: the source of the OpenAPI response
 * components (shared/http/openapi.ts). Handlers build their answers from the
 * domain types; test/integration/openapi.test.ts parses live answers with
 * these schemas so the two cannot drift apart unnoticed.
 */

/** One component, so the long date-time pattern appears once in the document. */
export const Timestamp = z.iso.datetime().check(z.describe('ISO-8601 timestamp, UTC'));
const at = Timestamp;
const state = z.enum(RUN_STATES);
const ms = z.int().check(z.minimum(0));

const StateChange = z.object({ state, at, reason: z.optional(z.string()) });

export const RunTimings = z
  .object({
    queuedAt: at,
    claimedAt: z.optional(at),
    launchedAt: z.optional(at),
    runningAt: z.optional(at),
    endedAt: z.optional(at),
    queueWaitMs: z.optional(ms).check(z.describe('queued → claimed by a dispatcher')),
    launchLatencyMs: z.optional(ms).check(z.describe('claimed → launched on the backend')),
    startLatencyMs: z
      .optional(ms)
      .check(z.describe('queued → running (or launched, when never seen running)')),
    runTimeMs: z.optional(ms).check(z.describe('running (or launched) → ended')),
    notStartedReason: z
      .optional(z.string())
      .check(z.describe('why a run that ended without being launched never started')),
  })
  .check(
    z.describe(
      'Start-latency record derived from the state history: first time in each state, durations in ms',
    ),
  );

export const RunSchema = z
  .object({
    id: z.string(),
    kind: z.enum(RUN_KINDS),
    targetId: z.optional(z.string()),
    asset: z.string(),
    extraVars: z.record(z.string(), z.unknown()),
    secrets: z.array(SecretBindingSchema).check(z.describe('Secret bindings: names only, never values')),
    ephemeralSecrets: z
      .optional(z.array(z.string()))
      .check(
        z.describe(
          'variables sent as plaintext extra vars (ansible_password …): bound to a per-run secret that is deleted when the run ends',
        ),
      ),
    operation: z.optional(K8sOperationSchema),
    sshUser: z.optional(z.string()),
    managedAccount: z.optional(z.string()),
    batchId: z.optional(z.string()),
    retryOfBatch: z.optional(z.string()).check(z.describe('the batch whose retry created this run')),
    requestedBy: z.string(),
    timeoutSeconds: z.int().check(z.minimum(1)),
    runner: z.optional(z.enum(RUNNERS)),
    image: z.optional(z.string()),
    state,
    history: z.array(StateChange),
    attempt: z.int().check(z.minimum(0)),
    version: z.int().check(z.minimum(1)),
    launch: z.optional(z.object({ backend: z.enum(RUNNERS), intentAt: at, handle: z.optional(z.string()) })),
    cancelRequested: z.boolean(),
    cancelRequestedAt: z.optional(at).check(z.describe('when the cancel was requested')),
    credentialLease: z
      .optional(z.string())
      .check(
        z.describe(
          'the just-in-time credential checkout to check in when the run ends (an id, not a secret)',
        ),
      ),
    heldAccount: z
      .optional(z.string())
      .check(
        z.describe(
          'the Password Safe managed account this run holds; runs on one account wait for each other',
        ),
      ),
    statusUnknownSince: z
      .optional(at)
      .check(z.describe('since when the backend has not answered how the task is doing (polled backends)')),
    exitCode: z.optional(z.int()),
    reason: z
      .optional(z.string())
      .check(z.describe('why the run was refused, failed, cancelled or timed out')),
    createdAt: at,
    updatedAt: at,
    timings: RunTimings,
  })
  .check(z.describe('A run. `state` is one of queued, dispatching, launched, running, or a terminal state'));

export const RunListSchema = z.object({
  runs: z.array(RunSchema),
  nextCursor: z
    .optional(z.string())
    .check(z.describe('pass as `cursor` for the next page; absent on the last page')),
});

export const LogPageSchema = z.object({
  runId: z.string(),
  state,
  complete: z
    .boolean()
    .check(z.describe('the run has ended: once a page comes back empty, nothing more will arrive')),
  lines: z.array(
    z.object({
      seq: z.int(),
      at,
      stream: z.enum(['stdout', 'stderr', 'system']),
      text: z.string().check(z.describe('redacted at the source')),
    }),
  ),
  nextCursor: z.string().check(z.describe('pass back as `cursor`; unchanged when nothing new arrived')),
});

const stored = {
  id: TargetIdSchema,
  createdAt: at,
  updatedAt: at,
  untargetable: z.optional(z.string()).check(z.describe('why this row can never be a target')),
};
export const TargetSchema = z
  .discriminatedUnion('kind', [
    z.extend(VmTargetSchema.def.getter(), stored),
    z.extend(ClusterTargetSchema.def.getter(), stored),
    z.extend(DatabaseTargetSchema.def.getter(), stored),
    z.extend(VirtualDesktopTargetSchema.def.getter(), stored),
  ])
  .check(z.describe('A registry row'));

export const TargetListSchema = z.object({ targets: z.array(TargetSchema) });

export const InventorySchema = z
  .record(z.string(), z.unknown())
  .check(z.describe('Ansible dynamic JSON inventory (`_meta.hostvars`, groups) built from the registry'));

const BatchRefusal = z.object({
  targetId: z.string(),
  runId: z.string().check(z.describe('the recorded `refused` run')),
  reason: z.string(),
});

export const BatchSubmittedSchema = z
  .object({
    batchId: z.string(),
    retryOf: z.optional(z.string()),
    runs: z.array(RunSchema).check(z.describe('the queued runs')),
    failed: z
      .array(BatchRefusal)
      .check(z.describe('targets the runner rules refused; recorded as `refused` runs')),
  })
  .check(z.describe('A submitted batch: `runs` + `failed` cover every target'));

const BatchMember = z.object({
  runId: z.string(),
  targetId: z.optional(z.string()),
  state,
  reason: z.optional(z.string()),
});

export const BatchRollupSchema = z
  .object({
    batchId: z.string(),
    kind: z.enum(RUN_KINDS),
    asset: z.string(),
    requestedBy: z.string(),
    createdAt: at,
    retryOf: z.optional(z.string()),
    total: z.int().check(z.minimum(1)),
    counts: z.object(
      Object.fromEntries(RUN_STATES.map((s) => [s, z.int().check(z.minimum(0))])) as Record<
        (typeof RUN_STATES)[number],
        z.ZodMiniInt
      >,
    ),
    complete: z.boolean().check(z.describe('every run has reached a terminal state')),
    failed: z
      .array(BatchMember)
      .check(z.describe(`runs that ended ${RETRYABLE_STATES.join(', ')}: what a retry re-submits`)),
    runs: z.array(BatchMember).check(z.describe('every run, oldest first')),
  })
  .check(z.describe('Rollup of a batch, computed from its runs'));

const AssetInfo = z.object({
  path: z.string(),
  size: z.int().check(z.minimum(0)),
  type: z
    .enum(['playbook', 'script', 'powershell', 'rpm', 'deb', 'other'])
    .check(z.describe('badge from the extension')),
});

export const AssetListSchema = z.object({ assets: z.array(AssetInfo) });

export const AssetUploadedSchema = z.extend(AssetInfo, {
  replaced: z.boolean().check(z.describe('an existing asset was replaced (overwrite: true)')),
});

export const HealthSchema = z.object({ status: z.literal('ok') });

export const OpenApiSchema = z
  .object({ openapi: z.string() })
  .check(z.describe('This document (OpenAPI 3.1)'));

export const ProblemSchema = z
  .object({
    type: z
      .string()
      .check(z.describe('stable URI naming the problem; `about:blank` for an unexpected error')),
    title: z.string(),
    status: z.int(),
    detail: z.optional(z.string()),
    instance: z.optional(z.string()).check(z.describe('the request path')),
    errors: z
      .optional(z.array(z.object({ path: z.string(), message: z.string() })))
      .check(z.describe('validation-failed, selection-refused: each offending field (`body.targetIds.3` …)')),
    targets: z
      .optional(z.array(z.object({ targetId: z.string(), reason: z.string() })))
      .check(z.describe('selection-refused: every offending target with its reason')),
  })
  .check(z.describe('RFC 9457 problem details (application/problem+json)'));
