import { describe, expect, it } from 'vitest';
import { googleError } from '../../../../shared/adapters/cloud-run/errors.ts';
import { LauncherUnavailableError } from '../../../../shared/domain/errors.ts';
import { isThrottling } from '../../../../shared/domain/launch-budget.ts';

/*
 * Cloud Run's quota errors, as the launcher maps them: a RunJob beyond the
 * running-executions quota (or the API's rate) answers 429 RESOURCE_EXHAUSTED,
 * which the launcher retries with backoff and then reports; the dispatcher
 * must treat it as throttling (the run waits), never as a failure.
 */
/** A GaxiosError's shape (gaxios 6/7: `status` and `response` from the HTTP answer), without the package. */
const exhausted = () => {
  const body = { error: { code: 429, status: 'RESOURCE_EXHAUSTED', message: 'Quota exceeded' } };
  return Object.assign(new Error(JSON.stringify(body)), {
    name: 'GaxiosError',
    status: 429,
    config: { url: 'http://127.0.0.1/v2/x:run' },
    response: { status: 429, data: body, headers: {} },
  });
};

describe('googleError for a Cloud Run quota answer', () => {
  it('is a retryable error the dispatcher sees as throttling (REST transport, GaxiosError)', () => {
    const error = googleError(exhausted(), 'Cloud Run', 'RunJob');
    expect(error).toBeInstanceOf(LauncherUnavailableError);
    expect(error.message).toMatch(/429 RESOURCE_EXHAUSTED/);
    expect(isThrottling(error)).toBe(true);
  });

  it('is throttling too when a long-running operation ends with gRPC code 8', () => {
    const failed = Object.assign(new Error('8 RESOURCE_EXHAUSTED: quota'), { code: 8 });
    expect(isThrottling(googleError(failed, 'Cloud Run', 'RunJob'))).toBe(true);
  });
});

describe('googleError unquoted (a call whose request carried a secret value)', () => {
  it('still reports a quota answer as throttling, carrying nothing of the request', () => {
    const error = googleError(exhausted(), 'Secret Manager', 'AddSecretVersion s', { quote: false });
    expect(isThrottling(error)).toBe(true);
    expect(JSON.stringify(error.cause)).not.toContain('127.0.0.1');
    expect((error.cause as Error).message).toBe('RESOURCE_EXHAUSTED');
  });
});
