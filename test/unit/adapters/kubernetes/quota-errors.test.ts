import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { isQuotaExceeded, kubeError } from '../../../../shared/adapters/kubernetes/errors.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { isThrottling } from '../../../../shared/domain/launch-budget.ts';

/** What client-node 1.x throws for an API answer: the status and the raw Status body. */
const answer = (code: number, reason: string, message: string) =>
  new ApiException(code, `HTTP-Code: ${code}`, JSON.stringify({ kind: 'Status', reason, message, code }), {});

// The API server's words when a ResourceQuota `pods: 100` is full (kube-apiserver's quota admission plugin).
const QUOTA =
  'pods "rw-01jexample" is forbidden: exceeded quota: rw-quota, requested: pods=1, used: pods=100, limited: pods=100';

describe('kubeError for a full ResourceQuota', () => {
  it('makes a 403 "exceeded quota" a wait (throttling), not a rejection', () => {
    const error = kubeError(answer(403, 'Forbidden', QUOTA), 'create pod rw-01jexample');
    expect(isQuotaExceeded(answer(403, 'Forbidden', QUOTA))).toBe(true);
    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect(error.message).toMatch(
      /^Kubernetes create pod rw-01jexample waits for quota \(403 Forbidden: pods/,
    );
    expect(isThrottling(error)).toBe(true);
  });

  it('keeps the quota wait when the call carried secrets, with no secret in the message or cause', () => {
    const error = kubeError(answer(403, 'Forbidden', `${QUOTA} s3cr3t-canary`), 'create secret x', [
      's3cr3t-canary',
    ]);
    expect(isThrottling(error)).toBe(true);
    expect(error.message).not.toContain('s3cr3t-canary');
    expect(JSON.stringify(error.cause)).not.toContain('s3cr3t-canary');
  });

  it('leaves any other 403 a rejection', () => {
    const error = kubeError(
      answer(403, 'Forbidden', 'pods is forbidden: User "x" cannot create resource "pods"'),
      'create pod rw-1',
    );
    expect(error).toBeInstanceOf(LaunchRejectedError);
    expect(isThrottling(error)).toBe(false);
  });
});
