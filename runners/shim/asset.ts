import { mkdirSync } from 'node:fs';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TaskSpec } from '../../shared/domain/task-spec.ts';
import { positiveInt } from './env.ts';
import { ShimError } from './errors.ts';

function assetFileName(url: URL): string {
  const last = url.pathname.split('/').pop() ?? '';
  const safe = decodeURIComponent(last).replace(/[^A-Za-z0-9._-]/g, '_');
  return safe === '' || safe === '.' || safe === '..' ? 'asset' : safe;
}

/**
 * What a failed read URL most likely means. The URL was signed without an
 * existence check (the run's submit made it), so an asset removed since
 * arrives here; a store answers 403 for a missing object when the signer may
 * not list the bucket, and for an expired URL.
 */
function statusHint(status: number): string {
  if (status === 404) return ' (the asset was removed from storage after the run was submitted)';
  if (status === 403) {
    return ' (the read URL expired, or the asset was removed from storage after the run was submitted)';
  }
  return '';
}

/** GET `raw` into `dir`; a presigned query never appears in a message. */
async function download(raw: string, dir: string, maxBytes: number, signal: AbortSignal): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ShimError('the asset URL is not a valid URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new ShimError(`the asset URL must be http or https, not ${url.protocol}`);
  }
  // Presigned URLs carry credentials in the query: name only origin + path.
  const shown = `${url.origin}${url.pathname}`;
  let response: Response;
  try {
    response = await fetch(url, { signal, redirect: 'follow' });
  } catch (error) {
    throw new ShimError(`could not fetch the asset ${shown}: ${(error as Error).message}`);
  }
  if (!response.ok || response.body === null) {
    throw new ShimError(
      `could not fetch the asset ${shown}: HTTP ${response.status}${statusHint(response.status)}`,
    );
  }
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    await response.body.cancel();
    throw new ShimError(`the asset ${shown} is larger than the ${maxBytes}-byte limit`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ShimError(`the asset ${shown} is larger than the ${maxBytes}-byte limit`);
    }
    chunks.push(value);
  }
  const target = join(dir, assetFileName(url));
  await writeFile(target, Buffer.concat(chunks), { mode: 0o600 });
  return target;
}

/**
 * The asset as a local path: a `file` asset as it is (it must be a file), a
 * `url` asset downloaded into `assetDir` (0600), within `RW_ASSET_MAX_BYTES`
 * and `RW_ASSET_TIMEOUT_MS`; aborted with `signal`.
 *
 * @example
 * const path = await resolveAsset(spec, join(workDir, 'asset'), process.env, abort.signal);
 */
export async function resolveAsset(
  spec: TaskSpec,
  assetDir: string,
  env: NodeJS.ProcessEnv,
  signal: AbortSignal,
): Promise<string> {
  if (spec.asset.kind === 'file') {
    const info = await stat(spec.asset.path).catch(() => undefined);
    if (info === undefined || !info.isFile())
      throw new ShimError(`the asset ${spec.asset.path} is not a file`);
    return spec.asset.path;
  }
  mkdirSync(assetDir, { mode: 0o700 });
  const maxBytes = positiveInt(env.RW_ASSET_MAX_BYTES, 256 * 1024 * 1024);
  const timeout = AbortSignal.timeout(positiveInt(env.RW_ASSET_TIMEOUT_MS, 300_000));
  return download(spec.asset.url, assetDir, maxBytes, AbortSignal.any([signal, timeout]));
}
