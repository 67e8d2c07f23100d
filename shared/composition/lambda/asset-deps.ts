import { S3Client } from '@aws-sdk/client-s3';
import { apiGatewayAuthenticator } from '../../http/api-gateway-auth.ts';
import { forcePathStyle, readAwsEnvironment } from '../aws-environment.ts';
import { buildAwsStorage } from '../storage.ts';
import type { AssetApiDeps } from './kinds.ts';
import { lambdaLogger } from './logger.ts';

/** The deps of an asset route, from the Lambda environment: the stack's bucket over one S3 client. */
export function assetApiDeps(source: Readonly<Record<string, string | undefined>>): AssetApiDeps {
  const { env, settings } = readAwsEnvironment(source);
  const storage = buildAwsStorage({
    settings,
    client: new S3Client({ forcePathStyle: forcePathStyle(env) }),
    bucket: env.ASSET_BUCKET,
    ...(env.ASSET_PREFIX === undefined ? {} : { prefix: env.ASSET_PREFIX }),
  });
  return {
    assets: storage.assets,
    storage,
    settings,
    logger: lambdaLogger(env.LOG_LEVEL),
    authenticate: apiGatewayAuthenticator(),
  };
}
