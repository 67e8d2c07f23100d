import { describe, expect, it } from 'vitest';
import { parseContainerTarget } from '../../../shared/domain/container-target.ts';

const target = {
  bin: 'docker',
  name: 'rw-r1',
  image: 'localhost/ansible:1',
  runArgs: ['--network', 'none'],
  assetMount: { host: '/srv/assets', container: '/ansible/assets' },
};

describe('parseContainerTarget (RW_CONTAINER)', () => {
  it('reads the target the docker executor writes', () => {
    expect(parseContainerTarget(JSON.stringify(target))).toEqual(target);
    const { assetMount: _, ...withoutMount } = target;
    expect(parseContainerTarget(JSON.stringify(withoutMount))).toEqual(withoutMount);
  });

  it.each([
    ['{', 'RW_CONTAINER is not valid JSON'],
    ['null', 'RW_CONTAINER must be a JSON object'],
    ['[]', 'RW_CONTAINER must be a JSON object'],
    [
      '{}',
      'invalid RW_CONTAINER: bin must be the docker CLI; name must be a container name; image must be an image reference; runArgs must be a list of strings',
    ],
    [JSON.stringify({ ...target, bin: '' }), 'invalid RW_CONTAINER: bin must be the docker CLI'],
    [JSON.stringify({ ...target, name: 'Rw r1' }), 'invalid RW_CONTAINER: name must be a container name'],
    [
      JSON.stringify({ ...target, image: '--privileged' }),
      'invalid RW_CONTAINER: image must be an image reference',
    ],
    [
      JSON.stringify({ ...target, runArgs: ['-v', 1] }),
      'invalid RW_CONTAINER: runArgs must be a list of strings',
    ],
    [
      JSON.stringify({ ...target, assetMount: { host: '/srv' } }),
      'invalid RW_CONTAINER: assetMount must be { host, container }',
    ],
  ])('refuses %s: %s', (text, message) => {
    expect(() => parseContainerTarget(text)).toThrow(new Error(message));
  });

  it('names a problem, never the value that has it', () => {
    expect(() => parseContainerTarget(JSON.stringify({ ...target, image: '-secret-value' }))).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining('secret-value') }),
    );
  });
});
