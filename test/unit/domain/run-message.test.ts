import { describe, expect, it } from 'vitest';
import {
  decodeRelayMessage,
  decodeRunMessage,
  encodeRelayMessage,
  encodeRunMessage,
} from '../../../shared/domain/run-message.ts';
import { vmTarget } from '../app/harness.ts';

describe('decodeRelayMessage', () => {
  it('reads the version and the runner plan the dispatcher sends', () => {
    const target = vmTarget('vm-1');
    const message = {
      runId: 'run-1',
      version: 4,
      attempt: 1,
      plan: { kind: 'vm', targetId: 'vm-1', asset: 'hello/site.yml', image: 'img:1', target },
    } as const;

    expect(decodeRelayMessage(encodeRelayMessage(message))).toEqual(message);
    expect(decodeRunMessage(encodeRelayMessage(message))).toEqual({ runId: 'run-1' });
  });

  it('reads a message in the old shape (run id only) as one with nothing to claim from', () => {
    expect(decodeRelayMessage(encodeRunMessage('run-1'))).toEqual({ runId: 'run-1' });
  });

  it('drops a version or plan of the wrong shape, and a target that is not the plan target', () => {
    const body = JSON.stringify({
      runId: 'run-1',
      version: '4',
      attempt: -1,
      plan: { kind: 'vm', targetId: 'vm-1', asset: 'a.yml', image: 'img', target: vmTarget('vm-2') },
    });

    expect(decodeRelayMessage(body)).toEqual({
      runId: 'run-1',
      plan: { kind: 'vm', targetId: 'vm-1', asset: 'a.yml', image: 'img' },
    });
    expect(decodeRelayMessage(JSON.stringify({ runId: 'run-1', plan: { kind: 'vm' } }))).toEqual({
      runId: 'run-1',
    });
    expect(decodeRelayMessage('not json')).toBeUndefined();
    expect(decodeRelayMessage(JSON.stringify({ id: 'run-1' }))).toBeUndefined();
  });
});
