import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RUNNER_IMAGE_DIRS } from '../../infra/constructs/runner-images.ts';
import { RUNNER_IMAGE_SETTINGS } from '../../infra/constructs/runners.ts';
import { PYWINRM_MISSING } from '../../runners/shim/preflight.ts';
import { cdkContext, REPO, type Synthesized, synth } from './synth.ts';

/**
 * The runner images as CDK container image assets, read from a real synth:
 * the task definitions reference the images `cdk deploy` builds, each asset's
 * staged build context holds only what its Dockerfile copies, and an image
 * setting, when set, still wins. Synth stages the contexts; nothing is built
 * (no container engine or registry is involved).
 */

type Json = any;

/** A synth with cdk-nag takes about a second alone, far longer on a loaded two-core machine. */
const SYNTH_TIMEOUT_MS = 120_000;

interface ImageAsset {
  /** The staged build context, relative to the cloud assembly. */
  readonly path: string;
  readonly file: string;
  readonly buildArgs?: Record<string, string>;
  readonly platform?: string;
  readonly imageTag: string;
}

/** The container image assets of the stack's asset manifest, as `cdk deploy` (cdk-assets) builds them. */
function imageAssets(s: Synthesized): ImageAsset[] {
  const assembly = s.app.synth();
  const manifest = JSON.parse(
    readFileSync(join(assembly.directory, `${s.stack.artifactId}.assets.json`), 'utf8'),
  ) as { dockerImages?: Record<string, Json> };
  return Object.values<Json>(manifest.dockerImages ?? {}).map((image) => ({
    path: image.source.directory,
    file: image.source.dockerFile,
    buildArgs: image.source.dockerBuildArgs,
    platform: image.source.platform,
    imageTag: (Object.values<Json>(image.destinations)[0] as Json).imageTag,
  }));
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

/** The task definitions' images, in RUNNER_IMAGE_SETTINGS order. */
function taskImages(s: Synthesized): Json[] {
  return Object.values<Json>(s.template.toJSON().Resources)
    .filter((r) => r.Type === 'AWS::ECS::TaskDefinition')
    .map((r) => r.Properties.ContainerDefinitions[0].Image);
}

/** cdk.json's dev environment with `settings` merged in. */
function devWith(settings: Record<string, unknown>): Record<string, unknown> {
  const environments = cdkContext().environments as Record<string, Json>;
  return {
    environments: {
      ...environments,
      dev: { ...environments.dev, settings: { ...environments.dev.settings, ...settings } },
    },
  };
}

describe('runner image assets', () => {
  let dev: Synthesized;
  let devAssets: ImageAsset[];
  beforeAll(() => {
    dev = synth('dev');
    devAssets = imageAssets(dev);
  }, SYNTH_TIMEOUT_MS);

  it(
    'build every runner image the dev environment leaves unset, and its task definitions run them',
    () => {
      const s = dev;
      const assets = devAssets;
      const outdir = s.app.outdir;

      // One Dockerfile for the three; RUNNER picks the image.
      expect(assets.map((a) => a.file)).toEqual(RUNNER_IMAGE_SETTINGS.map(() => 'runners/Dockerfile'));
      const images = taskImages(s);
      for (const [i, asset] of assets.entries()) {
        const context = join(outdir, asset.path);
        const runner = RUNNER_IMAGE_DIRS[RUNNER_IMAGE_SETTINGS[i] ?? 'k8s_runner_image'];

        expect(images[i]['Fn::Sub']).toMatch(
          new RegExp(`/cdk-hnb659fds-container-assets-[^:]+:${asset.imageTag}$`),
        );
        expect(asset.platform).toBe('linux/amd64');
        expect(asset.buildArgs).toEqual({ RUNNER: runner, IMAGE_VERSION: '0.1.0' });
        // Exactly what the Dockerfile copies, and the Dockerfile itself: no checkout, no node_modules, no token.
        expect(files(context)).toEqual([
          'dist/shim.mjs',
          'runners/Dockerfile',
          'runners/Dockerfile.dockerignore',
        ]);
        expect(readFileSync(join(context, 'runners/Dockerfile'), 'utf8')).toBe(
          readFileSync(join(REPO, 'runners/Dockerfile'), 'utf8'),
        );
        // A bundle of the current shim, made by this synth.
        expect(readFileSync(join(context, 'dist/shim.mjs'), 'utf8')).toContain(PYWINRM_MISSING);
      }
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'let the execution role pull them from the assets repository',
    () => {
      const statements = Object.values<Json>(dev.template.toJSON().Resources)
        .filter((r) => r.Type === 'AWS::IAM::Policy')
        .flatMap((r) => r.Properties.PolicyDocument.Statement);
      const pull = statements.find(
        (st) => Array.isArray(st.Action) && st.Action.includes('ecr:BatchGetImage'),
      );

      expect(JSON.stringify(pull?.Resource)).toContain(
        'cdk-hnb659fds-container-assets-111111111111-eu-west-1',
      );
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'leave a set image setting alone: that task definition pulls the named image',
    () => {
      const s = synth('dev', devWith({ ansible_cloud_image: 'registry.example.com/rw/ansible-cloud:1.2.3' }));

      expect(imageAssets(s).map((a) => a.buildArgs?.RUNNER)).toEqual(['ansible-winrm', 'helm-kubectl']);
      expect(taskImages(s)[1]).toBe('registry.example.com/rw/ansible-cloud:1.2.3');
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'follow the runner task architecture',
    () => {
      const environments = cdkContext().environments as Record<string, Json>;
      const s = synth('dev', {
        environments: {
          ...environments,
          dev: { ...environments.dev, runnerTask: { architecture: 'arm64' } },
        },
      });

      expect(imageAssets(s).map((a) => a.platform)).toEqual(['linux/arm64', 'linux/arm64', 'linux/arm64']);
    },
    SYNTH_TIMEOUT_MS,
  );

  it(
    'are not built for prod, whose settings name every image',
    () => {
      expect(imageAssets(synth('prod'))).toEqual([]);
    },
    SYNTH_TIMEOUT_MS,
  );
});
