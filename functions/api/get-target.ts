import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { NotFoundError } from '../../shared/domain/errors.ts';
import { untargetableReason } from '../../shared/domain/target.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { TargetIdParams } from '../../shared/http/schemas.ts';

/** GET /targets/{id}: the row, with the reason when it can never be a target. */
export const makeGetTarget = (deps: TableApiDeps) =>
  httpHandler(deps, {
    params: TargetIdParams,
    handle: async ({ params }) => {
      const target = await deps.targets.getTarget(params.id);
      if (target === undefined) throw new NotFoundError(`No target with id ${params.id}`);
      const reason = untargetableReason(target);
      return json(200, reason === undefined ? target : { ...target, untargetable: reason });
    },
  });

export const handler = tableHttpHandler(makeGetTarget);
