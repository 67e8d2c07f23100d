import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../shared/http/openapi.ts';
import { apiFuzz } from './api-fuzz.ts';

/*
 * CI size of the API fuzz (the bench sends 20,000: bench/reliability.ts fuzz).
 * The seed varies per run and is in the test name, so a failure is repeated
 * with FUZZ_SEED.
 */
const REQUESTS = 2_000;
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);

describe('API fuzz from the OpenAPI document', () => {
  it(`${REQUESTS} requests: nothing ≥ 500, every 4xx problem+json, no refusal changes state (seed ${SEED})`, async () => {
    const result = await apiFuzz({ requests: REQUESTS, seed: SEED });

    expect(result.findings.slice(0, 10)).toEqual([]);
    expect(result.requests).toBe(REQUESTS);
    expect(result.unsettled).toBe(0);
    // The fuzz proves nothing if it never got past validation, or if the snapshot could not see a change.
    expect(result.byStatus.get(202) ?? 0).toBeGreaterThan(0);
    expect(result.acceptedChanges).toBeGreaterThan(0);
    expect([...result.byStatus.keys()].filter((s) => s >= 400).length).toBeGreaterThanOrEqual(4);
    // Every operation of the document was exercised.
    const paths = openApiDocument().paths as Record<string, Record<string, unknown>>;
    const operations = Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.filter((op) => !result.byOperation.has(op))).toEqual([]);
  }, 180_000);
});
