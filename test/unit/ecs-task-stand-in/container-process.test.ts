import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { startContainerProcess } from '../../../tools/ecs-task-stand-in/container-process.ts';

describe('startContainerProcess', () => {
  it('runs with exactly the given environment in a working dir of its own, removed at the end', async () => {
    const chunks: Buffer[] = [];
    const { ended } = startContainerProcess(
      ['/bin/sh', '-c', 'echo "dir=$PWD"; echo "greeting=$GREETING home=$HOME" >&2; exit 3'],
      { GREETING: 'hi', PATH: process.env.PATH ?? '/usr/bin:/bin' },
      (chunk) => chunks.push(chunk),
    );

    expect(await ended).toEqual({ exitCode: 3 });
    const output = Buffer.concat(chunks).toString('utf8');
    expect(output).toContain('greeting=hi home=\n');
    const dir = /dir=(\S+)/.exec(output)?.[1] ?? '';
    expect(dir).toMatch(/rw-ecs-task-/);
    expect(existsSync(dir)).toBe(false);
  });

  it('reports death by signal n as 128 + n, as Docker does', async () => {
    const { child, ended } = startContainerProcess(['/bin/sh', '-c', 'exec sleep 30'], {}, () => {});
    child.once('spawn', () => child.kill('SIGTERM'));

    expect(await ended).toEqual({ exitCode: 143 });
  });

  it('answers the error of an entrypoint that cannot start', async () => {
    const { ended } = startContainerProcess(['/no/such/entrypoint'], {}, () => {});

    const end = await ended;

    expect('error' in end && end.error.message).toMatch(/ENOENT/);
  });
});
