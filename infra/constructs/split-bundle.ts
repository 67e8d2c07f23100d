import { join } from 'node:path';
import { type BundlingOptions, DockerImage } from 'aws-cdk-lib';
import { buildLambdaBundleSync } from '../lambda-bundle.ts';

/**
 * The asset bundling of one handler: infra/lambda-bundle.ts writes
 * `index.mjs` and its chunks into the asset directory (esbuild, split, then
 * what a cold start loads grouped into two chunks). NodejsFunction is not used
 * because it cannot split: it hands esbuild one `--outfile`.
 *
 * The entry and defines are fields of `local`, so CDK's asset cache (keyed on
 * the bundling options) tells the handlers apart. There is no container
 * fallback: the image is never run, and a failed build throws with the
 * bundler's message rather than silently trying Docker.
 */
export function splitBundle(
  projectRoot: string,
  entry: string,
  spec: { readonly controlsTasks: boolean; readonly discoversVms: boolean },
): BundlingOptions {
  const local = {
    entry,
    ...spec,
    tryBundle: (outputDir: string): boolean => {
      buildLambdaBundleSync(projectRoot, join(projectRoot, entry), join(outputDir, 'index.mjs'), spec);
      return true;
    },
  };
  return { image: DockerImage.fromRegistry('public.ecr.aws/sam/build-nodejs22.x'), local };
}
