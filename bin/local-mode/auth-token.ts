import { randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UnauthorizedError } from '../../shared/domain/errors.ts';
import type { Authenticator } from '../../shared/http/handler.ts';

/**
 * Local mode's bearer token: REMOTE_WORKER_TOKEN when set, else the one kept
 * in `<dataDir>/token` (0600), made at first start. `created` tells the caller
 * to print it once.
 */
export async function ensureToken(
  dataDir: string,
  fromEnv: string | undefined,
): Promise<{ token: string; created: boolean }> {
  if (fromEnv !== undefined && fromEnv !== '') return { token: fromEnv, created: false };
  const path = join(dataDir, 'token');
  try {
    const token = (await readFile(path, 'utf8')).trim();
    await chmod(path, 0o600);
    if (token.length > 0) return { token, created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const token = `rw_${randomBytes(32).toString('base64url')}`;
  await writeFile(path, `${token}\n`, { mode: 0o600, flag: 'w' });
  return { token, created: true };
}

/** Constant-time bearer check. The principal is a fixed name: local mode has one user. */
export function bearerAuthenticator(token: string, principal = 'local'): Authenticator {
  const expected = Buffer.from(token);
  return async (event) => {
    const header = event.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    const given = Buffer.from(match?.[1] ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new UnauthorizedError(
        match === null ? 'Send Authorization: Bearer <token>' : 'The bearer token is not valid',
      );
    }
    return principal;
  };
}
