import { submitRun } from '../../shared/app/runs.ts';
import { submitHttpHandler } from '../../shared/composition/lambda/submits.ts';
import { ValidationError } from '../../shared/domain/errors.ts';
import type { ApiDeps } from '../../shared/http/api-deps.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { SubmitRunBody } from '../../shared/http/request-schemas.ts';
import { runView } from '../../shared/http/schemas.ts';

const IDEMPOTENCY_KEY = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * POST /runs: 202 with the queued run, or 200 with a `refused` run and its
 * reason. A repeated `Idempotency-Key` returns the first run.
 */
export const makeSubmitRun = (deps: ApiDeps) =>
  httpHandler(deps, {
    body: SubmitRunBody,
    handle: async ({ body, principal, headers }) => {
      const key = headers['idempotency-key'];
      if (key !== undefined && !IDEMPOTENCY_KEY.test(key)) {
        throw new ValidationError('Idempotency-Key must be 1–128 letters, digits or . _ : -', [
          { path: 'header.Idempotency-Key', message: 'invalid' },
        ]);
      }
      const { run, created } = await submitRun(
        deps,
        body,
        principal,
        key === undefined ? {} : { idempotencyKey: key },
      );
      const status = run.state === 'refused' ? 200 : 202;
      return json(status, runView(run), {
        location: `/runs/${run.id}`,
        ...(created ? {} : { 'idempotent-replayed': 'true' }),
      });
    },
  });

export const handler = submitHttpHandler(makeSubmitRun);
