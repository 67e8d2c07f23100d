import type { Context } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeGetRunLogs } from '../../../functions/api/get-run-logs.ts';
import { RelayLauncher } from '../../../shared/adapters/relay/relay-launcher.ts';
import { SqliteWorkQueue } from '../../../shared/adapters/sqlite/work-queue.ts';
import { apiGatewayAuthenticator } from '../../../shared/http/api-gateway-auth.ts';
import type { HttpEvent } from '../../../shared/http/handler.ts';
import { LOG_PAGE_DEFAULT_LINES, LOG_PAGE_MAX_LINES } from '../../../shared/ports/log-store.ts';
import { createQueuedRun, makeTestApp, markLaunched, type TestApp } from '../app/harness.ts';

const CALLER = 'arn:aws:iam::123456789012:role/ci';

const logsEvent = (runId: string, query: Record<string, string> = {}): HttpEvent =>
  ({
    version: '2.0',
    routeKey: 'GET /runs/{id}/logs',
    rawPath: `/runs/${runId}/logs`,
    rawQueryString: new URLSearchParams(query).toString(),
    headers: {},
    requestContext: {
      http: { method: 'GET', path: `/runs/${runId}/logs` },
      authorizer: { iam: { userArn: CALLER } },
    },
    pathParameters: { id: runId },
    ...(Object.keys(query).length === 0 ? {} : { queryStringParameters: query }),
    isBase64Encoded: false,
  }) as unknown as HttpEvent;

describe('GET /runs/{id}/logs', () => {
  let app: TestApp;
  let call: (query?: Record<string, string>) => Promise<{ status: number; body: any }>;

  beforeEach(async () => {
    app = makeTestApp();
    // A launched relay run: its output is read through the launcher, as for every backend.
    const relay = new RelayLauncher(
      new SqliteWorkQueue({ db: app.db, name: 'relay', visibilityTimeoutSeconds: 30 }),
      app.logs,
    );
    const run = await markLaunched(
      app.store,
      app.clock,
      await createQueuedRun(app.store, app.clock, { id: 'run-logs' }),
    );
    const lines = Array.from({ length: LOG_PAGE_MAX_LINES + 200 }, (_, i) => ({
      stream: 'stdout' as const,
      text: `line ${i + 1}`,
    }));
    await app.logs.append(run.id, lines);
    const handler = makeGetRunLogs({
      ...app.deps,
      launchers: { local: relay },
      authenticate: apiGatewayAuthenticator(),
    });
    call = async (query = {}) => {
      const result = await handler(logsEvent(run.id, query), {} as Context);
      return { status: result.statusCode ?? 0, body: JSON.parse(result.body ?? '{}') };
    };
  });

  afterEach(() => app.close());

  it('answers as many lines as limit asks for, up to the documented maximum', async () => {
    const asked = await call({ limit: '700' });
    const most = await call({ limit: String(LOG_PAGE_MAX_LINES) });

    expect(asked.status).toBe(200);
    expect(asked.body.lines).toHaveLength(700);
    expect(most.body.lines).toHaveLength(LOG_PAGE_MAX_LINES);
    expect(most.body.lines.at(-1).text).toBe(`line ${LOG_PAGE_MAX_LINES}`);
  });

  it('answers the default page without a limit, and continues from the cursor with the same limit', async () => {
    const first = await call();
    const next = await call({ cursor: first.body.nextCursor, limit: '300' });

    expect(first.body.lines).toHaveLength(LOG_PAGE_DEFAULT_LINES);
    expect(next.body.lines).toHaveLength(300);
    expect(next.body.lines[0].text).toBe(`line ${LOG_PAGE_DEFAULT_LINES + 1}`);
  });

  it.each(['0', String(LOG_PAGE_MAX_LINES + 1), 'many'])(
    'refuses limit=%s with 400 problem+json naming limit',
    async (limit) => {
      const answer = await call({ limit });

      expect(answer.status).toBe(400);
      expect(answer.body.type).toBe('https://remote-worker.dev/problems/validation-failed');
      expect(JSON.stringify(answer.body.errors)).toContain('limit');
    },
  );
});
