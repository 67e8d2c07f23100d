import * as z from 'zod';
import { RETRYABLE_STATES } from '../domain/batch.ts';
import { K8sOperationSchema, RUN_KINDS, RUN_STATES, RUNNERS, SecretBindingSchema } from '../domain/run.ts';
import {
  ClusterTargetSchema,
  DatabaseTargetSchema,
  TargetIdSchema,
  VirtualDesktopTargetSchema,
  VmTargetSchema,
} from '../domain/target.ts';

/**
 * What the API answers, as zod schemas: the source of the OpenAPI response
 * components (shared/http/openapi.ts). Handlers build their answers from the
 * domain types; test/integration/openapi.test.ts parses live answers with
 * these schemas so the two cannot drift apart unnoticed.
 */

/** One component, so the long date-time pattern appears once in the document. */
export const Timestamp = z.iso.datetime().describe('ISO-8601 timestamp, UTC');
const at = Timestamp;
const state = z.enum(RUN_STATES);
const ms = z.int().min(0);

const StateChange = z.object({ state, at, reason: z.string().optional() });

export const RunTimings = z
  .object({
    queuedAt: at,
    claimedAt: at.optional(),
    launchedAt: at.optional(),
    runningAt: at.optional(),
    endedAt: at.optional(),
    queueWaitMs: ms.optional().describe('queued → claimed by a dispatcher'),
    launchLatencyMs: ms.optional().describe('claimed → launched on the backend'),
    startLatencyMs: ms.optional().describe('queued → running (or launched, when never seen running)'),
    runTimeMs: ms.optional().describe('running (or launched) → ended'),
    notStartedReason: z
      .string()
      .optional()
      .describe('why a run that ended without being launched never started'),
  })
  .describe('Start-latency record derived from the state history: first time in each state, durations in ms');

export const RunSchema = z
  .object({
    id: z.string(),
    kind: z.enum(RUN_KINDS),
    targetId: z.string().optional(),
    asset: z.string(),
    extraVars: z.record(z.string(), z.unknown()),
    secrets: z.array(SecretBindingSchema).describe('Secret bindings: names only, never values'),
    ephemeralSecrets: z
      .array(z.string())
      .optional()
      .describe(
        'variables sent as plaintext extra vars (ansible_password …): bound to a per-run secret that is deleted when the run ends',
      ),
    operation: K8sOperationSchema.optional(),
    sshUser: z.string().optional(),
    managedAccount: z.string().optional(),
    batchId: z.string().optional(),
    retryOfBatch: z.string().optional().describe('the batch whose retry created this run'),
    requestedBy: z.string(),
    timeoutSeconds: z.int().min(1),
    runner: z.enum(RUNNERS).optional(),
    image: z.string().optional(),
    state,
    history: z.array(StateChange),
    attempt: z.int().min(0),
    version: z.int().min(1),
    launch: z.object({ backend: z.enum(RUNNERS), intentAt: at, handle: z.string().optional() }).optional(),
    cancelRequested: z.boolean(),
    cancelRequestedAt: at.optional().describe('when the cancel was requested'),
    credentialLease: z
      .string()
      .optional()
      .describe('the just-in-time credential checkout to check in when the run ends (an id, not a secret)'),
    heldAccount: z
      .string()
      .optional()
      .describe('the Password Safe managed account this run holds; runs on one account wait for each other'),
    statusUnknownSince: at
      .optional()
      .describe('since when the backend has not answered how the task is doing (polled backends)'),
    exitCode: z.int().optional(),
    reason: z.string().optional().describe('why the run was refused, failed, cancelled or timed out'),
    createdAt: at,
    updatedAt: at,
    timings: RunTimings,
  })
  .describe('A run. `state` is one of queued, dispatching, launched, running, or a terminal state');

export const RunListSchema = z.object({
  runs: z.array(RunSchema),
  nextCursor: z.string().optional().describe('pass as `cursor` for the next page; absent on the last page'),
});

export const LogPageSchema = z.object({
  runId: z.string(),
  state,
  complete: z.boolean().describe('the run has ended: once a page comes back empty, nothing more will arrive'),
  lines: z.array(
    z.object({
      seq: z.int(),
      at,
      stream: z.enum(['stdout', 'stderr', 'system']),
      text: z.string().describe('redacted at the source'),
    }),
  ),
  nextCursor: z.string().describe('pass back as `cursor`; unchanged when nothing new arrived'),
});

const stored = {
  id: TargetIdSchema,
  createdAt: at,
  updatedAt: at,
  untargetable: z.string().optional().describe('why this row can never be a target'),
};
export const TargetSchema = z
  .discriminatedUnion('kind', [
    VmTargetSchema.unwrap().extend(stored),
    ClusterTargetSchema.unwrap().extend(stored),
    DatabaseTargetSchema.unwrap().extend(stored),
    VirtualDesktopTargetSchema.unwrap().extend(stored),
  ])
  .describe('A registry row');

export const TargetListSchema = z.object({ targets: z.array(TargetSchema) });

export const InventorySchema = z
  .record(z.string(), z.unknown())
  .describe('Ansible dynamic JSON inventory (`_meta.hostvars`, groups) built from the registry');

const BatchRefusal = z.object({
  targetId: z.string(),
  runId: z.string().describe('the recorded `refused` run'),
  reason: z.string(),
});

export const BatchSubmittedSchema = z
  .object({
    batchId: z.string(),
    retryOf: z.string().optional(),
    runs: z.array(RunSchema).describe('the queued runs'),
    failed: z.array(BatchRefusal).describe('targets the runner rules refused; recorded as `refused` runs'),
  })
  .describe('A submitted batch: `runs` + `failed` cover every target');

const BatchMember = z.object({
  runId: z.string(),
  targetId: z.string().optional(),
  state,
  reason: z.string().optional(),
});

export const BatchRollupSchema = z
  .object({
    batchId: z.string(),
    kind: z.enum(RUN_KINDS),
    asset: z.string(),
    requestedBy: z.string(),
    createdAt: at,
    retryOf: z.string().optional(),
    total: z.int().min(1),
    counts: z.object(
      Object.fromEntries(RUN_STATES.map((s) => [s, z.int().min(0)])) as Record<
        (typeof RUN_STATES)[number],
        z.ZodInt
      >,
    ),
    complete: z.boolean().describe('every run has reached a terminal state'),
    failed: z
      .array(BatchMember)
      .describe(`runs that ended ${RETRYABLE_STATES.join(', ')}: what a retry re-submits`),
    runs: z.array(BatchMember).describe('every run, oldest first'),
  })
  .describe('Rollup of a batch, computed from its runs');

const AssetInfo = z.object({
  path: z.string(),
  size: z.int().min(0),
  type: z
    .enum(['playbook', 'script', 'powershell', 'rpm', 'deb', 'other'])
    .describe('badge from the extension'),
});

export const AssetListSchema = z.object({ assets: z.array(AssetInfo) });

export const AssetUploadedSchema = AssetInfo.extend({
  replaced: z.boolean().describe('an existing asset was replaced (overwrite: true)'),
});

export const HealthSchema = z.object({ status: z.literal('ok') });

export const OpenApiSchema = z.object({ openapi: z.string() }).describe('This document (OpenAPI 3.1)');

export const ProblemSchema = z
  .object({
    type: z.string().describe('stable URI naming the problem; `about:blank` for an unexpected error'),
    title: z.string(),
    status: z.int(),
    detail: z.string().optional(),
    instance: z.string().optional().describe('the request path'),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .describe('validation-failed, selection-refused: each offending field (`body.targetIds.3` …)'),
    targets: z
      .array(z.object({ targetId: z.string(), reason: z.string() }))
      .optional()
      .describe('selection-refused: every offending target with its reason'),
  })
  .describe('RFC 9457 problem details (application/problem+json)');
