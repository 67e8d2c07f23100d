import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '../..');
const CONTEXT = join(REPO, 'test/fixtures/images/ansible-no-shim');
const BASE_IMAGE = 'localhost/debian:bookworm';

const podman = (args: readonly string[], timeoutMs = 60_000): string =>
  execFileSync('podman', args, { encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] });

/**
 * The test image with ansible-playbook and no shim, built once per input:
 * its tag is a hash of the Containerfile and the base image's id, so a
 * changed Containerfile or a rebuilt base makes a new image and an existing
 * one is reused (CI builds it once, in about 15 s). The base comes from
 * runners/base/build-base-image.sh (itself idempotent). Concurrent test
 * files wait for one build through flock.
 */
export function ensureAnsibleImage(): string {
  execFileSync(join(REPO, 'runners/base/build-base-image.sh'), [BASE_IMAGE], {
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 300_000,
  });
  const baseId = podman(['image', 'inspect', '--format', '{{.Id}}', BASE_IMAGE]).trim();
  const containerfile = readFileSync(join(CONTEXT, 'Containerfile'), 'utf8');
  const hash = createHash('sha256').update(containerfile).update('\0').update(baseId).digest('hex');
  const tag = `localhost/rw-test-ansible:${hash.slice(0, 12)}`;
  // `image exists` answers 1 for a missing image: flock serialises the check and the build.
  execFileSync(
    'flock',
    [
      '/tmp/rw-test-ansible-image.lock',
      'sh',
      '-c',
      'podman image exists "$1" || podman build -q -t "$1" -f "$2/Containerfile" "$2" >/dev/null',
      'sh',
      tag,
      CONTEXT,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], timeout: 600_000 },
  );
  return tag;
}

/** Names of the containers (any state) carrying a label, as `podman ps -a` lists them. */
export function containersLabelled(label: string): string[] {
  return podman(['ps', '-a', '--filter', `label=${label}`, '--format', '{{.Names}}'])
    .split('\n')
    .filter((name) => name !== '');
}

/** `podman inspect` of a container, raw JSON text. */
export const inspectContainer = (name: string): string => podman(['inspect', name]);
