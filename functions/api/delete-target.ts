import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { NotFoundError } from '../../shared/domain/errors.ts';
import { httpHandler } from '../../shared/http/handler.ts';
import { TargetIdParams } from '../../shared/http/schemas.ts';

/** DELETE /targets/{id}: runs already queued for it are refused at dispatch. */
export const makeDeleteTarget = (deps: TableApiDeps) =>
  httpHandler(deps, {
    params: TargetIdParams,
    handle: async ({ params }) => {
      if (!(await deps.targets.deleteTarget(params.id)))
        throw new NotFoundError(`No target with id ${params.id}`);
      return { statusCode: 204 };
    },
  });

export const handler = tableHttpHandler(makeDeleteTarget);
