import { resolve } from 'node:path';
import type { BundleSpec } from '../bundling.ts';
import { buildLambdaBundle } from '../lambda-bundle.ts';

/**
 * `node --import tsx infra/bin/bundle-lambda.ts <entry> <outfile> '<spec json>'`:
 * one handler's asset, as infra/lambda-bundle.ts `buildLambdaBundleSync` asks
 * for it from the CDK's synchronous local bundling. Run from the project root.
 */
const [entry, outfile, spec] = process.argv.slice(2);
if (entry === undefined || outfile === undefined) {
  console.error('usage: bundle-lambda.ts <entry> <outfile> [spec json]');
  process.exit(2);
}
await buildLambdaBundle(resolve(entry), resolve(outfile), JSON.parse(spec ?? '{}') as BundleSpec, {
  absWorkingDir: process.cwd(),
});
