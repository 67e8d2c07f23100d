import { MAX_UPLOAD_BODY_BYTES, uploadAsset } from '../../shared/app/assets.ts';
import { type AssetApiDeps, assetHttpHandler } from '../../shared/composition/lambda/assets.ts';
import { httpHandler, json } from '../../shared/http/handler.ts';
import { UploadAssetBody } from '../../shared/http/request-schemas.ts';

/**
 * POST /assets: `{ path, contentBase64, overwrite? }` onto the active storage
 * backend. 201 when created, 200 when `overwrite: true` replaced an asset,
 * 409 asset-exists when it would replace one without it.
 */
export const makeUploadAsset = (deps: AssetApiDeps) =>
  httpHandler(deps, {
    body: UploadAssetBody,
    maxBodyBytes: MAX_UPLOAD_BODY_BYTES,
    handle: async ({ body }) => {
      const { asset, replaced } = await uploadAsset(deps, body);
      return json(replaced ? 200 : 201, { ...asset, replaced });
    },
  });

export const handler = assetHttpHandler(makeUploadAsset);
