import { describe, expect, it } from 'vitest';
import { containerTargetOf, positiveInt, redactEnvNames } from '../../../runners/shim/env.ts';
import { ShimError } from '../../../runners/shim/errors.ts';

describe('positiveInt', () => {
  it('reads a positive integer and falls back for anything else', () => {
    expect(positiveInt('5000', 1)).toBe(5000);
    for (const raw of [undefined, '', '0', '-3', '1.5', 'soon']) expect(positiveInt(raw, 7)).toBe(7);
  });
});

describe('redactEnvNames', () => {
  it('splits RW_REDACT_ENV on commas, trimmed, without empty names', () => {
    expect(redactEnvNames({ RW_REDACT_ENV: ' A_TOKEN, ,B ' })).toEqual(['A_TOKEN', 'B']);
    expect(redactEnvNames({})).toEqual([]);
  });
});

describe('containerTargetOf', () => {
  it('is undefined in process mode and the parsed target in container mode', () => {
    const target = { bin: 'podman', name: 'rw-run-1', image: 'localhost/ansible:1', runArgs: ['--init'] };

    expect(containerTargetOf({})).toBeUndefined();
    expect(containerTargetOf({ RW_CONTAINER: '' })).toBeUndefined();
    expect(containerTargetOf({ RW_CONTAINER: JSON.stringify(target) })).toEqual(target);
  });

  it('refuses a bad RW_CONTAINER as a ShimError naming the problem', () => {
    expect(() => containerTargetOf({ RW_CONTAINER: '{"bin": ""}' })).toThrow(ShimError);
    expect(() => containerTargetOf({ RW_CONTAINER: '{' })).toThrow('RW_CONTAINER is not valid JSON');
  });
});
