import { z } from 'zod';
import type { SubmittedBatch } from '../app/batches.ts';
import { MAX_ASSET_PATH_LENGTH } from '../domain/asset-path.ts';
import { MAX_BATCH_TARGETS } from '../domain/batch.ts';
import { isEnvName } from '../domain/env-name.ts';
import { isPlaintextPasswordVar } from '../domain/ephemeral-secrets.ts';
import { maskPasswordVars } from '../domain/redaction.ts';
import { K8sOperationSchema, RUN_KINDS, RUN_STATES, type Run, SecretBindingSchema } from '../domain/run.ts';
import { type RunTimings, runTimings } from '../domain/run-timings.ts';
import { TargetIdSchema } from '../domain/target.ts';
import { LOG_PAGE_DEFAULT_LINES, LOG_PAGE_MAX_LINES } from '../ports/log-store.ts';

/** Extra vars travel in the run record and to the task: keep them modest. */
const MAX_EXTRA_VARS_BYTES = 64 * 1024;

export const IdParams = z.object({ id: z.string().min(1).max(128) });
export const TargetIdParams = z.object({ id: TargetIdSchema });

/** Fields every run request shares: `POST /runs` adds `targetId`, `POST /batches` adds `targetIds`. */
const RUN_REQUEST_FIELDS = {
  kind: z.enum(RUN_KINDS),
  asset: z.string().min(1).max(1024),
  extraVars: z.record(z.string(), z.unknown()).default({}),
  secrets: z.array(SecretBindingSchema).max(50).default([]),
  operation: K8sOperationSchema.optional(),
  sshUser: z.string().min(1).max(64).optional(),
  managedAccount: z.string().min(1).max(256).optional(),
  timeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(7 * 24 * 3600)
    .optional(),
};

type RunRequestFields = z.infer<z.ZodObject<typeof RUN_REQUEST_FIELDS>>;
/** Everything but `kind`, so the target field can come second in the documented schema. */
const { kind: KIND_FIELD, ...RUN_REQUEST_REST } = RUN_REQUEST_FIELDS;

/** Cross-field rules of a run request (variable names, extra-var size, secret bindings, k8s operation). */
function checkRunRequest(body: RunRequestFields, ctx: z.RefinementCtx<RunRequestFields>): void {
  for (const key of Object.keys(body.extraVars)) {
    if (!isEnvName(key)) {
      ctx.addIssue({ code: 'custom', path: ['extraVars', key], message: 'must be a valid variable name' });
    }
  }
  if (Buffer.byteLength(JSON.stringify(body.extraVars)) > MAX_EXTRA_VARS_BYTES) {
    ctx.addIssue({
      code: 'custom',
      path: ['extraVars'],
      message: `must be at most ${MAX_EXTRA_VARS_BYTES} bytes as JSON`,
    });
  }
  const seen = new Set<string>();
  body.secrets.forEach((binding, i) => {
    if (seen.has(binding.var)) {
      ctx.addIssue({
        code: 'custom',
        path: ['secrets', i, 'var'],
        message: `${binding.var} is bound twice`,
      });
    }
    if (binding.var in body.extraVars) {
      ctx.addIssue({
        code: 'custom',
        path: ['secrets', i, 'var'],
        message: `${binding.var} is also an extra var`,
      });
    }
    seen.add(binding.var);
  });
  if (body.managedAccount !== undefined) {
    if (body.kind !== 'vm') {
      ctx.addIssue({
        code: 'custom',
        path: ['managedAccount'],
        message: 'only vm runs take a managed account (a registered database’s comes from its registry row)',
      });
    }
    // The checked-out password is the run's ansible_password: a second one would leave it unclear which logs in.
    const clash = [...Object.keys(body.extraVars), ...body.secrets.map((s) => s.var)].find((name) =>
      isPlaintextPasswordVar(name),
    );
    if (clash !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['managedAccount'],
        message: `a managed account brings its own password: drop ${clash}`,
      });
    }
  }
  if (body.kind === 'k8s_op' && body.operation === undefined) {
    ctx.addIssue({ code: 'custom', path: ['operation'], message: 'a k8s_op run needs an operation' });
  }
  if (body.kind !== 'k8s_op' && body.operation !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['operation'], message: 'only k8s_op runs take an operation' });
  }
}

export const SubmitRunBody = z
  .strictObject({ kind: KIND_FIELD, targetId: TargetIdSchema.optional(), ...RUN_REQUEST_REST })
  .superRefine(checkRunRequest);
export type SubmitRunBody = z.infer<typeof SubmitRunBody>;

/**
 * `POST /batches`: a run body with `targetIds` (1–50) instead of `targetId`.
 * Repeated ids are a selection problem (shared/domain/batch.ts), reported with
 * every other offending target in one answer.
 */
export const SubmitBatchBody = z
  .strictObject({
    kind: KIND_FIELD,
    targetIds: z.array(TargetIdSchema).min(1).max(MAX_BATCH_TARGETS).describe('distinct target ids'),
    ...RUN_REQUEST_REST,
  })
  .superRefine(checkRunRequest);
export type SubmitBatchBody = z.infer<typeof SubmitBatchBody>;

/**
 * `POST /assets`: JSON with the content base64-encoded, which API Gateway and
 * Lambda pass through unchanged (the decoded size limit lives in shared/app/assets.ts).
 */
export const UploadAssetBody = z.strictObject({
  path: z.string().min(1).max(MAX_ASSET_PATH_LENGTH),
  // An empty file is almost always a failed read on the client's side, and runs as nothing at all.
  contentBase64: z.base64().min(1, 'must not be empty: upload a file with content'),
  overwrite: z.boolean().default(false),
});
export type UploadAssetBody = z.infer<typeof UploadAssetBody>;

export const ListRunsQuery = z.strictObject({
  batchId: z.string().min(1).max(128).optional(),
  state: z.enum(RUN_STATES).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z.string().min(1).max(512).optional(),
});

/** The cap is every backend's reader's own (shared/ports/log-store.ts), so a page holds what `limit` asks. */
export const LogsQuery = z.strictObject({
  cursor: z.string().min(1).max(512).optional(),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(LOG_PAGE_MAX_LINES)
    .default(LOG_PAGE_DEFAULT_LINES)
    .describe(
      `Most lines in the page (1–${LOG_PAGE_MAX_LINES}, default ${LOG_PAGE_DEFAULT_LINES}), on every backend; a page may hold fewer while output is still arriving`,
    ),
});

/** The run as clients see it: internal claim bookkeeping stays inside; `timings` is derived from the history. */
export type RunView = Omit<Run, 'owner'> & { readonly timings: RunTimings };
export function runView(run: Run): RunView {
  const { owner: _owner, ...view } = run;
  return { ...view, extraVars: maskPasswordVars(run.extraVars), timings: runTimings(run) };
}

/** The answer of `POST /batches` and `POST /batches/{id}/retry`. */
export function batchSubmittedView(batch: SubmittedBatch) {
  return { ...batch, runs: batch.runs.map(runView) };
}
