import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Stage } from 'aws-cdk-lib';
import { DockerImageAsset, Platform } from 'aws-cdk-lib/aws-ecr-assets';
import { ContainerImage } from 'aws-cdk-lib/aws-ecs';
import { Construct } from 'constructs';
import { bundleShim, SHIM_BUNDLE } from '../../runners/shim/bundle.ts';
import type { RunnerImageSetting } from './runners.ts';

/**
 * The image each runner image setting's image is: the value of runners/Dockerfile's
 * RUNNER build argument, and the runners/ directory of its README.
 */
export const RUNNER_IMAGE_DIRS = {
  ansible_local_image: 'ansible-winrm',
  ansible_cloud_image: 'ansible-cloud',
  k8s_runner_image: 'helm-kubectl',
} as const satisfies Record<RunnerImageSetting, string>;

/** The one Dockerfile of the three runner images. */
const DOCKERFILE = 'runners/Dockerfile';

export interface RunnerImageAssetsProps {
  /** The settings whose image the stack builds (those the operator did not set). */
  readonly settings: readonly RunnerImageSetting[];
  /** The repository root (runners/ and the shim's sources). */
  readonly projectRoot: string;
  readonly architecture: 'x86_64' | 'arm64';
}

/**
 * The runner images as CDK container image assets: `cdk deploy` builds each
 * one from runners/Dockerfile (build argument RUNNER) and pushes it to the
 * bootstrap's ECR repository, so a fresh deploy needs no image published beforehand.
 *
 * The shim is bundled here, at synth (esbuild, about 100 ms), into a build
 * context that holds exactly what the Dockerfile copies, laid out as in the
 * repository: `dist/shim.mjs` and `runners/Dockerfile` (with its
 * `.dockerignore`). Nothing else of the checkout — node_modules, a local
 * `.remote-worker/` token, `secrets.json` — can reach the builder, and the
 * asset's hash changes exactly when the Dockerfile or the shim does. Synth
 * only stages the context; the image is built by `cdk deploy` (or `cdk-assets`),
 * so synth stays offline.
 *
 * Build arguments keep the Dockerfile's public defaults (Node's Debian
 * image, kubectl and helm downloaded and checksummed); only RUNNER and the
 * version label (from package.json) are set.
 *
 * @example
 * const built = new RunnerImageAssets(stack, 'RunnerImages', { settings: ['k8s_runner_image'], projectRoot, architecture: 'x86_64' });
 * built.images.k8s_runner_image; // ContainerImage for a task definition
 */
export class RunnerImageAssets extends Construct {
  readonly assets: Readonly<Partial<Record<RunnerImageSetting, DockerImageAsset>>>;
  readonly images: Readonly<Partial<Record<RunnerImageSetting, ContainerImage>>>;

  constructor(scope: Construct, id: string, props: RunnerImageAssetsProps) {
    super(scope, id);
    const outdir = Stage.of(this)?.outdir;
    if (outdir === undefined) throw new Error('RunnerImageAssets must be inside an App or Stage');
    const version = (
      JSON.parse(readFileSync(join(props.projectRoot, 'package.json'), 'utf8')) as { version: string }
    ).version;
    const platform = props.architecture === 'arm64' ? Platform.LINUX_ARM64 : Platform.LINUX_AMD64;

    const assets: Partial<Record<RunnerImageSetting, DockerImageAsset>> = {};
    const images: Partial<Record<RunnerImageSetting, ContainerImage>> = {};
    for (const setting of props.settings) {
      const runner = RUNNER_IMAGE_DIRS[setting];
      // Under the cloud assembly: made anew by every synth, beside the assets CDK stages from it.
      const context = join(outdir, 'runner-image-contexts', runner);
      rmSync(context, { recursive: true, force: true });
      mkdirSync(join(context, 'runners'), { recursive: true });
      bundleShim(props.projectRoot, join(context, SHIM_BUNDLE));
      for (const file of [DOCKERFILE, `${DOCKERFILE}.dockerignore`]) {
        copyFileSync(join(props.projectRoot, file), join(context, file));
      }
      const asset = new DockerImageAsset(this, runner, {
        directory: context,
        file: DOCKERFILE,
        platform,
        buildArgs: { RUNNER: runner, IMAGE_VERSION: version },
      });
      assets[setting] = asset;
      images[setting] = ContainerImage.fromDockerImageAsset(asset);
    }
    this.assets = assets;
    this.images = images;
  }
}
