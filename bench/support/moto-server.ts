import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A moto server on a free loopback port, for the benchmarks that run AWS mode against it. */
const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

const SERVER = join(import.meta.dirname, '../../test/support/moto_server.py');

export async function startMoto(): Promise<{ endpoint: string; child: ChildProcess }> {
  const port = await freePort();
  // test/support/moto_server.py: the tests' moto, which exits when its stdin (this pipe) closes.
  const child = spawn('python3', [SERVER, '-H', '127.0.0.1', '-p', String(port)], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`moto exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${endpoint}/moto-api/data.json`);
      await res.arrayBuffer();
      if (res.ok) return { endpoint, child };
    } catch {
      // not up yet
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error('moto did not start within 30 s');
}
