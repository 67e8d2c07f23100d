import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import {
  DomainError,
  type ErrorCode,
  type FieldError,
  SelectionRefusedError,
  type TargetRefusal,
  ValidationError,
} from '../domain/errors.ts';

/** Base of every problem `type` URI; stable, documented in the OpenAPI contract. */
export const PROBLEM_BASE = 'https://remote-worker.dev/problems/';

export interface ProblemKind {
  readonly status: number;
  readonly title: string;
}

/** One table from domain error code to HTTP status and title. */
export const PROBLEM_KINDS = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  not_found: { status: 404, title: 'Not found' },
  run_conflict: { status: 409, title: 'The run changed while this request was handled' },
  invalid_transition: { status: 409, title: 'The run cannot make that change in its current state' },
  idempotency_mismatch: { status: 422, title: 'Idempotency-Key was already used for a different request' },
  asset_outside_root: { status: 400, title: 'The asset path escapes the storage root' },
  asset_not_found: { status: 422, title: 'The asset does not exist on the storage backend' },
  runner_not_configured: { status: 422, title: 'The runner is not configured' },
  runner_refused: { status: 422, title: 'No runner can take this run' },
  launcher_unavailable: { status: 503, title: 'The runner backend is unavailable' },
  launch_rejected: { status: 422, title: 'The runner backend rejected the launch' },
  unauthorized: { status: 401, title: 'Authentication required' },
  payload_too_large: { status: 413, title: 'The request body is too large' },
  unsupported_media_type: { status: 415, title: 'The request body must be application/json' },
  settings_invalid: { status: 500, title: 'The service is misconfigured' },
  selection_refused: { status: 422, title: 'The target selection is refused' },
  nothing_to_retry: { status: 409, title: 'The batch has nothing to retry' },
  asset_exists: { status: 409, title: 'An asset already exists at that path' },
  no_active_storage: { status: 503, title: 'No active storage backend' },
} as const satisfies Record<ErrorCode, ProblemKind>;

interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly instance?: string;
  readonly errors?: readonly FieldError[];
  /** selection_refused: every offending target with its reason. */
  readonly targets?: readonly TargetRefusal[];
}

/** The stable `type` URI of a domain error code, e.g. `…/problems/runner-refused`. */
export const problemType = (code: ErrorCode): string => PROBLEM_BASE + code.replaceAll('_', '-');

const headers = (extra: Record<string, string> = {}) => ({
  'content-type': 'application/problem+json',
  'cache-control': 'no-store',
  ...extra,
});

/** Render any thrown value as RFC 9457 problem+json. Unknown errors become a bare 500. */
export function problemResponse(error: unknown, instance?: string): APIGatewayProxyStructuredResultV2 {
  if (error instanceof DomainError) {
    const kind = PROBLEM_KINDS[error.code];
    const problem: Problem = {
      type: problemType(error.code),
      title: kind.title,
      status: kind.status,
      detail: error.message,
      ...(instance === undefined ? {} : { instance }),
      ...((error instanceof ValidationError || error instanceof SelectionRefusedError) &&
      error.fields.length > 0
        ? { errors: error.fields }
        : {}),
      ...(error instanceof SelectionRefusedError ? { targets: error.targets } : {}),
    };
    const extra: Record<string, string> =
      error.code === 'unauthorized' ? { 'www-authenticate': 'Bearer' } : {};
    return { statusCode: kind.status, headers: headers(extra), body: JSON.stringify(problem) };
  }
  const problem: Problem = {
    type: 'about:blank',
    title: 'Internal Server Error',
    status: 500,
    ...(instance === undefined ? {} : { instance }),
  };
  return { statusCode: 500, headers: headers(), body: JSON.stringify(problem) };
}
