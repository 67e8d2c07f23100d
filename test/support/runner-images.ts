import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { bundleShim, SHIM_BUNDLE } from '../../runners/shim/bundle.ts';

/**
 * Runner images on the machine's real container engine (podman), built from
 * the local Debian base without a registry, for tests that need them and for
 * CI, which builds them once per run:
 *
 * - {@link ensureLocalBuildInputs}: the base image and the local stand-ins
 *   for the Dockerfiles' public inputs (runners/base/build-local-images.sh:
 *   Debian + Node, kubectl + helm);
 * - {@link ensureRunnerImage}: one runner image, tagged by a hash of what
 *   goes into it (runners/Dockerfile and its RUNNER, the shim bundle, the input images' ids), so
 *   a second call — another test file, the next CI step — finds it and builds
 *   nothing; a changed Dockerfile or shim gets a new tag.
 *
 * Concurrent callers (vitest runs files in parallel) wait on one flock per image.
 *
 * @example
 * const image = await ensureRunnerImage('ansible-winrm'); // { tag: 'localhost/remote-worker-ansible-winrm:3f2a…', … }
 */

const execFileAsync = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../..');
export const ENGINE = process.env.CONTAINER_ENGINE ?? 'podman';

export type RunnerImageName = 'ansible-winrm' | 'ansible-cloud' | 'helm-kubectl';

export interface LocalBuildInputs {
  /** Debian bookworm with Node: the runner Dockerfiles' BASE_IMAGE. */
  readonly baseImage: string;
  /** /tools/kubectl and /tools/helm: their TOOLS_IMAGE. */
  readonly toolsImage: string;
}

export interface RunnerImage {
  readonly tag: string;
  /** False when an image with this tag already existed. */
  readonly built: boolean;
  /** Wall time of this call (the build, or the look-up), ms. */
  readonly elapsedMs: number;
  /** As the engine reports it (uncompressed layers). */
  readonly sizeBytes: number;
}

/** Build-time budget: the first ansible image installs Debian's Ansible (about 100 s here). */
export const IMAGE_BUILD_TIMEOUT_MS = 15 * 60_000;

async function run(file: string, args: readonly string[]): Promise<string> {
  const { stdout } = await execFileAsync(file, args, {
    cwd: REPO,
    maxBuffer: 64 * 1024 * 1024,
    timeout: IMAGE_BUILD_TIMEOUT_MS,
  }).catch((error: { stderr?: string; stdout?: string; message: string }) => {
    throw new Error(
      `${file} ${args.join(' ')} failed: ${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`,
    );
  });
  return stdout;
}

let inputs: Promise<LocalBuildInputs> | undefined;

export function ensureLocalBuildInputs(): Promise<LocalBuildInputs> {
  inputs ??= run(join(REPO, 'runners/base/build-local-images.sh'), []).then((out) => {
    const [baseImage, toolsImage] = out.trim().split('\n');
    if (baseImage === undefined || toolsImage === undefined) {
      throw new Error(`build-local-images.sh printed no image names: ${out}`);
    }
    return { baseImage, toolsImage };
  });
  return inputs;
}

const imageId = async (image: string): Promise<string> =>
  (await run(ENGINE, ['image', 'inspect', '--format', '{{.Id}}', image])).trim();

export async function imageSize(image: string): Promise<number> {
  return Number((await run(ENGINE, ['image', 'inspect', '--format', '{{.Size}}', image])).trim());
}

const building = new Map<RunnerImageName, Promise<RunnerImage>>();

export function ensureRunnerImage(name: RunnerImageName): Promise<RunnerImage> {
  let pending = building.get(name);
  if (pending === undefined) {
    pending = buildRunnerImage(name);
    building.set(name, pending);
  }
  return pending;
}

async function buildRunnerImage(name: RunnerImageName): Promise<RunnerImage> {
  const started = Date.now();
  const { baseImage, toolsImage } = await ensureLocalBuildInputs();
  // One Dockerfile for the three images: RUNNER picks the stage the image is made from.
  const dockerfile = join(REPO, 'runners', 'Dockerfile');
  // The context holds exactly what the Dockerfile copies, laid out as in the repository.
  const context = mkdtempSync(join(tmpdir(), `rw-image-${name}-`));
  try {
    mkdirSync(join(context, 'dist'));
    const shim = bundleShim(REPO, join(context, SHIM_BUNDLE));
    const buildArgs = { RUNNER: name, BASE_IMAGE: baseImage, TOOLS_IMAGE: toolsImage };
    const hash = createHash('sha256')
      .update(readFileSync(dockerfile))
      .update(readFileSync(shim))
      .update(JSON.stringify(buildArgs))
      .update(await imageId(baseImage))
      .update(await imageId(toolsImage))
      .digest('hex')
      .slice(0, 16);
    const tag = `localhost/remote-worker-${name}:${hash}`;
    const args = Object.entries(buildArgs).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
    // Inside the lock: a caller that waited finds the image the first one built.
    const out = await run('flock', [
      join(tmpdir(), `remote-worker-image-${name}.lock`),
      'sh',
      '-c',
      '"$0" image exists "$1" && echo exists || { shift; exec "$@"; }',
      ENGINE,
      tag,
      ENGINE,
      'build',
      '--quiet',
      '-f',
      dockerfile,
      ...args,
      '-t',
      tag,
      context,
    ]);
    return {
      tag,
      built: out.trim() !== 'exists',
      elapsedMs: Date.now() - started,
      sizeBytes: await imageSize(tag),
    };
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
}
