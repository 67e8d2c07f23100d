import { describe, expect, it } from 'vitest';
import {
  isShimOwnedEnv,
  parseExitRecord,
  SHIM_EXIT,
  SHIM_PREFIX,
  shimLineStream,
} from '../../../shared/domain/shim-protocol.ts';

describe('shimLineStream', () => {
  it("ships the shim's own lines as system and the tool's as stdout", () => {
    expect(shimLineStream(`${SHIM_PREFIX}ansible-playbook exited with code 0`)).toBe('system');
    expect(shimLineStream('TASK [Gathering Facts] ****')).toBe('stdout');
  });

  it('needs the whole prefix at the start of the line', () => {
    expect(shimLineStream('remote-worker:no space')).toBe('stdout');
    expect(shimLineStream(` ${SHIM_PREFIX}indented`)).toBe('stdout');
  });
});

describe('parseExitRecord', () => {
  it('reads the exit code, or the signal when there is none', () => {
    expect(parseExitRecord('{"exitCode":2,"signal":null,"endedAt":"2026-01-01T00:00:00Z"}')).toEqual({
      exitCode: 2,
    });
    expect(parseExitRecord('{"exitCode":null,"signal":"SIGTERM","endedAt":"x"}')).toEqual({
      signal: 'SIGTERM',
    });
  });

  it('answers undefined for a record that is torn, not an object, or says nothing', () => {
    for (const text of ['', '{"exitCode":', 'null', '3', '{"exitCode":"0"}', '{}']) {
      expect(parseExitRecord(text)).toBeUndefined();
    }
  });
});

describe('isShimOwnedEnv', () => {
  it('owns RW_* and what the shim sets for the tool, not the rest', () => {
    for (const name of ['RW_TASK', 'RW_SECRET_0', 'PATH', 'NO_COLOR', 'ANSIBLE_LOCAL_TEMP']) {
      expect(isShimOwnedEnv(name)).toBe(true);
    }
    for (const name of ['PORTAINER_URL', 'ANSIBLE_CONFIG', 'KUBECONFIG', 'rw_lower']) {
      expect(isShimOwnedEnv(name)).toBe(false);
    }
  });
});

describe('SHIM_EXIT', () => {
  it("keeps the shell's conventions: timeout 124, failure before the tool 125, not found 127", () => {
    expect(SHIM_EXIT).toEqual({ timedOut: 124, shimFailed: 125, notFound: 127 });
  });
});
