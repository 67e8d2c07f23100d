import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { API_HANDLERS, WORKER_HANDLERS } from '../../infra/handlers.ts';
import { REPO } from './synth.ts';

const entries = [
  ...new Set([...Object.values(API_HANDLERS), ...Object.values(WORKER_HANDLERS)].map((s) => s.entry)),
];

describe('infra/handlers.ts', () => {
  // The stack deploys each entry with handler `index.handler`; a module without that export deploys a function that can never run.
  it.each(entries)('%s exports the Lambda handler', async (entry) => {
    const module = (await import(pathToFileURL(resolve(REPO, entry)).href)) as { handler?: unknown };

    expect(typeof module.handler).toBe('function');
  });
});
