import { join } from 'node:path';
import { API_HANDLERS, constructIdOf, type HandlerSpec, WORKER_HANDLERS } from '../../../infra/handlers.ts';
import { buildLambdaBundle } from '../../../infra/lambda-bundle.ts';
import { REPO } from '../harness.ts';

/** Every handler the stack deploys, by the construct id that names its function. */
const SPECS: ReadonlyMap<string, HandlerSpec> = new Map(
  Object.values<HandlerSpec>({ ...API_HANDLERS, ...WORKER_HANDLERS }).map((spec) => [
    constructIdOf(spec.entry),
    spec,
  ]),
);

/**
 * Each function's bundle, built as the stack builds it for `cdk synth`: the
 * same function (infra/lambda-bundle.ts, which the stack's local bundling
 * calls), the same entry and compile-time defines. `cdk synth`
 * itself bundles all 25 handlers one after another (72–86 s on this machine);
 * building only the functions the path runs, in parallel, keeps the file's
 * runtime modest. test/infra/cdk-synth.test.ts checks that the CLI's bundles
 * are these (ESM, banner, SDK inside).
 */
export async function buildBundles(ids: readonly string[], outDir: string): Promise<Record<string, string>> {
  const bundles: Record<string, string> = {};
  await Promise.all(
    ids.map(async (id) => {
      const spec = SPECS.get(id);
      if (spec === undefined) throw new Error(`no handler spec for function ${id} (infra/handlers.ts)`);
      const outfile = join(outDir, id, 'index.mjs');
      await buildLambdaBundle(join(REPO, spec.entry), outfile, spec, { absWorkingDir: REPO });
      bundles[id] = outfile;
    }),
  );
  return bundles;
}
