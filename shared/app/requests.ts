import { MAX_ASSET_PATH_LENGTH } from '../domain/asset-path.ts';
import { MAX_BATCH_TARGETS } from '../domain/batch.ts';
import { isEnvName } from '../domain/env-name.ts';
import { isPlaintextPasswordVar } from '../domain/ephemeral-secrets.ts';
import { K8sOperationSchema, RUN_KINDS, SecretBindingSchema } from '../domain/run.ts';
import { TargetIdSchema } from '../domain/target.ts';
import { once } from '../lib/once.ts';
import * as z from '../lib/zod.ts';

/**
 * What the use cases take as input, with every rule an input must meet:
 * `submitRun`, `submitBatch` and `uploadAsset` accept these types, and the
 * HTTP layer validates request bodies with these schemas (shared/http/schemas.ts)
 * and documents them (shared/http/openapi.ts).
 */

/** Extra vars travel in the run record and to the task: keep them modest. */
const MAX_EXTRA_VARS_BYTES = 64 * 1024;

/**
 * Fields every run request shares: `POST /runs` adds `targetId`, `POST /batches` adds `targetIds`.
 *
 * Built on first use, like the three request schemas below (`z.lazy`): zod
 * builds a schema with real work, and each route parses one body, so each
 * builds only its own (UploadAsset's cold start went to 0.95 of what it was
 * when it stopped building the two run bodies; 31 pairs).
 */
const runRequestFields = once(() => ({
  kind: z.enum(RUN_KINDS),
  asset: z.textBetween(1, 1024),
  extraVars: z._default(z.record(z.string(), z.unknown()), {}),
  secrets: z._default(z.array(SecretBindingSchema).check(z.maxLength(50)), []),
  operation: z.optional(K8sOperationSchema),
  sshUser: z.optional(z.textBetween(1, 64)),
  managedAccount: z.optional(z.textBetween(1, 256)),
  timeoutSeconds: z.optional(z.int().check(z.minimum(1), z.maximum(7 * 24 * 3600))),
}));

type RunRequestFields = z.infer<z.ZodMiniObject<ReturnType<typeof runRequestFields>>>;

/** Cross-field rules of a run request (variable names, extra-var size, secret bindings, k8s operation). */
function checkRunRequest(body: RunRequestFields, ctx: z.core.$RefinementCtx<RunRequestFields>): void {
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

export const SubmitRunRequest = z.lazy(() => {
  // `kind` first and the target field second, as the documented schema lists them.
  const { kind, ...rest } = runRequestFields();
  return z
    .strictObject({ kind, targetId: z.optional(TargetIdSchema), ...rest })
    .check(z.superRefine(checkRunRequest));
});
export type SubmitRunRequest = z.infer<typeof SubmitRunRequest>;

/**
 * `POST /batches`: a run body with `targetIds` (1–50) instead of `targetId`.
 * Repeated ids are a selection problem (shared/domain/batch.ts), reported with
 * every other offending target in one answer.
 */
export const SubmitBatchRequest = z.lazy(() => {
  const { kind, ...rest } = runRequestFields();
  return z
    .strictObject({
      kind,
      targetIds: z
        .array(TargetIdSchema)
        .check(z.minLength(1), z.maxLength(MAX_BATCH_TARGETS), z.describe('distinct target ids')),
      ...rest,
    })
    .check(z.superRefine(checkRunRequest));
});
export type SubmitBatchRequest = z.infer<typeof SubmitBatchRequest>;

/**
 * `POST /assets`: JSON with the content base64-encoded, which API Gateway and
 * Lambda pass through unchanged (the decoded size limit lives in assets.ts).
 */
export const UploadAssetRequest = z.lazy(() =>
  z.strictObject({
    path: z.textBetween(1, MAX_ASSET_PATH_LENGTH),
    // An empty file is almost always a failed read on the client's side, and runs as nothing at all.
    contentBase64: z.base64().check(z.minLength(1, 'must not be empty: upload a file with content')),
    overwrite: z._default(z.boolean(), false),
  }),
);
export type UploadAssetRequest = z.infer<typeof UploadAssetRequest>;
