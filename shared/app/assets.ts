import { assetPathProblem } from '../domain/asset-path.ts';
import { AssetOutsideRootError, PayloadTooLargeError, ValidationError } from '../domain/errors.ts';
import type { PutAssetResult } from '../ports/asset-store.ts';
import type { AppDeps } from './deps.ts';
import type { UploadAssetRequest } from './requests.ts';

/**
 * Largest asset `POST /assets` takes, decoded. The body carries it base64
 * (4/3 larger) and a synchronous Lambda invocation takes at most 6 MB, so
 * 4 MiB is what fits behind API Gateway. Larger packages go to the bucket
 * with the cloud's own tools (`aws s3 cp`).
 */
export const MAX_ASSET_BYTES = 4 * 1024 * 1024;

/** The JSON body that carries a MAX_ASSET_BYTES asset, with room for the path and the envelope. */
export const MAX_UPLOAD_BODY_BYTES = Math.ceil(MAX_ASSET_BYTES / 3) * 4 + 8 * 1024;

/**
 * Check the path and size, then store the asset on the active backend. An
 * existing asset is replaced only with `overwrite: true` (AssetExistsError
 * otherwise); the store makes that check and the write one atomic step.
 *
 * @example
 * await uploadAsset(deps, { path: 'tools/setup.sh', contentBase64: 'IyEvYmluL3NoCg==', overwrite: false });
 */
export async function uploadAsset(
  deps: Pick<AppDeps, 'assets'>,
  body: UploadAssetRequest,
): Promise<PutAssetResult> {
  const problem = assetPathProblem(body.path);
  if (problem?.code === 'outside_root') {
    throw new AssetOutsideRootError(`Asset path "${body.path}" ${problem.message}`);
  }
  if (problem !== undefined) {
    throw new ValidationError(`Asset path "${body.path}" ${problem.message}`, [
      { path: 'body.path', message: problem.message },
    ]);
  }
  const bytes = Buffer.from(body.contentBase64, 'base64');
  if (bytes.byteLength > MAX_ASSET_BYTES) {
    throw new PayloadTooLargeError(
      `The asset is ${bytes.byteLength} bytes; the limit is ${MAX_ASSET_BYTES} (upload larger packages to the storage backend directly)`,
    );
  }
  return deps.assets.put(body.path, bytes, { overwrite: body.overwrite });
}
