import { join } from 'node:path';
import { type BundlingOptions, DockerImage } from 'aws-cdk-lib';
import { buildSync } from 'esbuild';
import { esbuildOptionsFor } from '../bundling.ts';

/**
 * The asset bundling of one handler: esbuild, run in the synthesizing
 * process, writes `index.mjs` and its chunks into the asset directory
 * (infra/bundling.ts `esbuildOptionsFor`, code-split). NodejsFunction is not
 * used because it cannot split: it hands esbuild one `--outfile`.
 *
 * The entry and defines are fields of `local`, so CDK's asset cache (keyed on
 * the bundling options) tells the handlers apart. There is no container
 * fallback: the image is never run, and a failed build throws with esbuild's
 * message rather than silently trying Docker.
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
      buildSync({
        ...esbuildOptionsFor(join(projectRoot, entry), join(outputDir, 'index.mjs'), spec),
        absWorkingDir: projectRoot,
      });
      return true;
    },
  };
  return { image: DockerImage.fromRegistry('public.ecr.aws/sam/build-nodejs22.x'), local };
}
