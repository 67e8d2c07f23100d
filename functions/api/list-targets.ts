import { lambdaHttpHandler } from '../../shared/composition/lambda.ts';
import { untargetableReason } from '../../shared/domain/target.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /targets: every row; rows that can never be a target carry `untargetable` with the reason. */
export const makeListTargets = (deps: ApiDeps) =>
  httpHandler(deps, {
    handle: async () => {
      const targets = await deps.targets.listTargets();
      return json(200, {
        targets: targets.map((t) => {
          const reason = untargetableReason(t);
          return reason === undefined ? t : { ...t, untargetable: reason };
        }),
      });
    },
  });

export const handler = lambdaHttpHandler(makeListTargets);
