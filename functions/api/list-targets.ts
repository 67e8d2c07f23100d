import { type TableApiDeps, tableHttpHandler } from '../../shared/composition/lambda/tables.ts';
import { untargetableReason } from '../../shared/domain/target.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';

/** GET /targets: every row; rows that can never be a target carry `untargetable` with the reason. */
export const makeListTargets = (deps: TableApiDeps) =>
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

export const handler = tableHttpHandler(makeListTargets);
