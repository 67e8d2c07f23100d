import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { ValidationError } from '../../shared/domain/errors.ts';
import { reservedTargetIdProblem } from '../../shared/domain/hypervisors.ts';
import { type Target, TargetBodySchema } from '../../shared/domain/target.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { TargetIdParams } from '../../shared/http/schemas.ts';

/** PUT /targets/{id}: create or replace a registry row. */
export const makePutTarget = (deps: TableApiDeps) =>
  httpHandler(deps, {
    params: TargetIdParams,
    body: TargetBodySchema,
    handle: async ({ params, body }) => {
      const reserved = reservedTargetIdProblem(params.id);
      if (reserved !== undefined)
        throw new ValidationError(reserved, [{ path: 'path.id', message: reserved }]);
      const existing = await deps.targets.getTarget(params.id);
      const now = deps.clock.now();
      const target = {
        ...body,
        id: params.id,
        createdAt: existing?.createdAt ?? now,
        updatedAt: now,
      } as Target;
      await deps.targets.putTarget(target);
      return json(existing === undefined ? 201 : 200, target);
    },
  });

export const handler = tableHttpHandler(makePutTarget);
