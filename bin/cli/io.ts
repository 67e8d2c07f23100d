import { readFile } from 'node:fs/promises';
import { sleep } from '../../shared/lib/sleep.ts';

/** Everything the CLI touches outside itself, so tests can run it in-process. */
export interface Io {
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  readonly env: Readonly<Record<string, string | undefined>>;
  readFile(path: string): Promise<Buffer>;
  sleep(ms: number): Promise<void>;
}

export const nodeIo = (): Io => ({
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  readFile: (path) => readFile(path),
  sleep,
});
