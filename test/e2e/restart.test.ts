import { describe, expect, it } from 'vitest';
import { type Api, allLogs, client, LOCALHOST_TARGET, newDataDir, startLocal, waitFor } from './harness.ts';

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'timed_out', 'refused'];

async function states(api: Api, ids: readonly string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await api('GET', `/runs/${id}`)).body.state as string));
}

describe('local mode restart', () => {
  it('brings every accepted run to a terminal state after kill -9', async () => {
    const dataDir = newDataDir();
    const first = await startLocal(dataDir, { RELAY_CONCURRENCY: '2' });
    const api1 = client(first.url, first.token);
    await api1('PUT', '/targets/localhost', LOCALHOST_TARGET);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await api1('POST', '/runs', {
        kind: 'vm',
        targetId: 'localhost',
        asset: 'hello/slow.yml',
        extraVars: { seconds: 3 },
      });
      expect(res.status).toBe(202);
      ids.push(res.body.id);
    }
    // Wait until two are running and the rest still wait, then pull the plug.
    const atCrash = await waitFor('two running runs', async () => {
      const s = await states(api1, ids);
      return s.filter((x) => x === 'running').length === 2 ? s : undefined;
    });
    await first.kill9();
    const wasRunning = ids.filter((_, i) => atCrash[i] === 'running');

    const second = await startLocal(dataDir, { RELAY_CONCURRENCY: '2' });
    try {
      const api2 = client(second.url, second.token);
      const final = await waitFor(
        'every run to end',
        async () => {
          const s = await states(api2, ids);
          return s.every((x) => TERMINAL.includes(x)) ? s : undefined;
        },
        90_000,
      );
      // The plays that were running were adopted and finished; the queued ones ran after the restart.
      expect(final).toEqual(ids.map(() => 'succeeded'));
      for (const id of wasRunning) {
        expect(await allLogs(api2, id)).toContain('restarted and adopted this run');
      }
      for (const id of ids.filter((id) => !wasRunning.includes(id))) {
        expect(await allLogs(api2, id)).not.toContain('adopted');
      }
    } finally {
      await second.stop();
    }
  }, 120_000);
});
