import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { hasEnded, hasStarted } from '../../../../shared/adapters/kubernetes/pod-status.ts';

const pod = (phase: string, runner?: Record<string, unknown>): V1Pod => ({
  status: {
    phase,
    ...(runner === undefined
      ? {}
      : {
          containerStatuses: [
            { name: 'runner', state: runner, ready: false, restartCount: 0, image: 'i', imageID: '' },
          ],
        }),
  },
});

describe('hasEnded and hasStarted', () => {
  it('a pod has ended once Succeeded or Failed, and started once its runner container runs or ran', () => {
    expect([pod('Succeeded'), pod('Failed')].map(hasEnded)).toEqual([true, true]);
    expect([pod('Pending'), pod('Running'), pod('Unknown')].map(hasEnded)).toEqual([false, false, false]);

    expect(hasStarted(pod('Pending'))).toBe(false);
    expect(hasStarted(pod('Pending', { waiting: { reason: 'ContainerCreating' } }))).toBe(false);
    expect(hasStarted(pod('Running', { running: { startedAt: new Date() } }))).toBe(true);
    expect(hasStarted(pod('Running', { terminated: { exitCode: 0 } }))).toBe(true);
    expect(hasStarted(pod('Failed'))).toBe(true);
  });
});
