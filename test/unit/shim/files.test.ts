import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readKubeconfigFile, writeExitRecord, writePrivateFile } from '../../../runners/shim/files.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rw-shim-files-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('writePrivateFile', () => {
  it('writes a 0600 file, even over an existing file with a wider mode', () => {
    const file = join(dir, 'ssh-key');
    writeFileSync(file, 'old', { mode: 0o644 });

    writePrivateFile(file, 'new');

    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});

describe('writeExitRecord', () => {
  it('leaves exit.json whole and private, and no temporary file', () => {
    const record = { exitCode: 2, signal: null, endedAt: '2026-01-01T00:00:00.000Z', reason: 'why' };

    writeExitRecord(dir, record);

    expect(readdirSync(dir)).toEqual(['exit.json']);
    expect(JSON.parse(readFileSync(join(dir, 'exit.json'), 'utf8'))).toEqual(record);
    expect(statSync(join(dir, 'exit.json')).mode & 0o777).toBe(0o600);
  });
});

describe('readKubeconfigFile', () => {
  it('reads the file, and names the path when it cannot (a path, never content)', () => {
    writeFileSync(join(dir, 'config'), 'apiVersion: v1\n');

    expect(readKubeconfigFile(join(dir, 'config'))).toBe('apiVersion: v1\n');
    expect(() => readKubeconfigFile(join(dir, 'missing'))).toThrow(
      new RegExp(`^cannot read the kubeconfig ${join(dir, 'missing')}: ENOENT`),
    );
  });
});
