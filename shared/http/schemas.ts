import { z } from 'zod';
import { K8sOperationSchema, RUN_KINDS, RUN_STATES, type Run, SecretBindingSchema } from '../domain/run.ts';
import { TargetIdSchema } from '../domain/target.ts';

/** Extra vars travel in the run record and to the task: keep them modest. */
const MAX_EXTRA_VARS_BYTES = 64 * 1024;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const IdParams = z.object({ id: z.string().min(1).max(128) });
export const TargetIdParams = z.object({ id: TargetIdSchema });

export const SubmitRunBody = z
  .strictObject({
    kind: z.enum(RUN_KINDS),
    targetId: TargetIdSchema.optional(),
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
  })
  .superRefine((body, ctx) => {
    for (const key of Object.keys(body.extraVars)) {
      if (!VAR_NAME.test(key)) {
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
    if (body.kind === 'k8s_op' && body.operation === undefined) {
      ctx.addIssue({ code: 'custom', path: ['operation'], message: 'a k8s_op run needs an operation' });
    }
    if (body.kind !== 'k8s_op' && body.operation !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['operation'], message: 'only k8s_op runs take an operation' });
    }
  });
export type SubmitRunBody = z.infer<typeof SubmitRunBody>;

export const ListRunsQuery = z.strictObject({
  batchId: z.string().min(1).max(128).optional(),
  state: z.enum(RUN_STATES).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z.string().min(1).max(512).optional(),
});

export const LogsQuery = z.strictObject({
  cursor: z.string().min(1).max(512).optional(),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
});

/** The run as clients see it: internal claim bookkeeping stays inside. */
export type RunView = Omit<Run, 'owner'>;
export function runView(run: Run): RunView {
  const { owner: _owner, ...view } = run;
  return view;
}
