import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  dockerAvailable,
  isNoSuchContainer,
  isUnavailable,
  runCli,
} from '../../shared/adapters/relay/docker-cli.ts';
import { fakeCli as fakeCliIn } from '../support/fake-cli.ts';

/**
 * The docker CLI as the docker executor runs it: podman for a real engine;
 * a stand-in script only for what an engine cannot be made to do on demand
 * (a daemon that is down, a CLI that hangs).
 */
let scratch: string;
beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-docker-cli-test-'));
});
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

const fakeCli = (body: string): string => fakeCliIn(scratch, body);

describe('runCli', () => {
  it('answers the exit code and both streams', async () => {
    const cli = fakeCli('echo "out $1"; echo "err $2" >&2; exit 3');

    expect(await runCli(cli, ['a', 'b'], process.env)).toEqual({
      code: 3,
      stdout: 'out a\n',
      stderr: 'err b\n',
    });
  });

  it('answers the spawn error of a CLI that is not there, without rejecting', async () => {
    const result = await runCli(join(scratch, 'missing-docker'), ['ps'], process.env);

    expect(result.code).toBeNull();
    expect(result.error?.code).toBe('ENOENT');
  });

  it('kills a CLI that outlives the timeout', async () => {
    const started = Date.now();

    const result = await runCli(fakeCli('exec sleep 60'), [], process.env, 200);

    expect(result.code).toBeNull();
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("tells podman's answer for a missing container", async () => {
    const result = await runCli(
      'podman',
      ['inspect', '--type', 'container', `rw-missing-${randomUUID()}`],
      process.env,
    );

    expect(result.code).not.toBe(0);
    expect(isNoSuchContainer(result.stderr)).toBe(true);
    expect(isUnavailable(result.stderr)).toBe(false);
  });
});

describe('isUnavailable', () => {
  it("knows docker's words for an engine it cannot reach", () => {
    expect(
      isUnavailable(
        'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?',
      ),
    ).toBe(true);
    expect(
      isUnavailable('error during connect: Get "http://%2F%2F.%2Fpipe%2Fdocker_engine/v1.24/info"'),
    ).toBe(true);
    expect(isUnavailable('Error: no such container rw-x')).toBe(false);
  });
});

describe('dockerAvailable', () => {
  it('is true only when the server answers', async () => {
    const down = fakeCli('echo "Cannot connect to the Docker daemon" >&2; exit 1');

    expect(await dockerAvailable('podman')).toBe(true);
    expect(await dockerAvailable(down)).toBe(false);
    expect(await dockerAvailable(join(scratch, 'missing-docker'))).toBe(false);
  });

  it('gives up on a CLI that hangs', async () => {
    const hung = fakeCli('exec sleep 60');
    const started = Date.now();

    expect(await dockerAvailable(hung, 300)).toBe(false);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
