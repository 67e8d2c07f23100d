import { randomUUID } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A stand-in docker CLI: a `/bin/sh` script in `dir` running `body`, for what
 * a real engine cannot be made to do on demand (a daemon that is down, a CLI
 * that hangs). Answers the script's path.
 */
export function fakeCli(dir: string, body: string): string {
  const bin = join(dir, `docker-${randomUUID()}`);
  writeFileSync(bin, `#!/bin/sh\n${body}\n`);
  chmodSync(bin, 0o755);
  return bin;
}
