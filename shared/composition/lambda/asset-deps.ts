import { S3Client } from '@aws-sdk/client-s3';
import { S3AssetStore } from '../../adapters/s3/asset-store.ts';
import type { AssetStorage } from '../../app/asset-access.ts';
import { apiGatewayAuthenticator } from '../../http/api-gateway-auth.ts';
import { forcePathStyle, readAwsEnvironment } from '../aws-environment.ts';
import { buildAwsStorage } from '../storage.ts';
import type { AssetApiDeps, AwsConfiguration } from './kinds.ts';
import { lambdaLogger } from './logger.ts';

/** The stack's asset bucket over one S3 client. */
export function assetStorage({ env, settings }: AwsConfiguration): AssetStorage {
  return buildAwsStorage({
    settings,
    bucket: env.ASSET_BUCKET,
    ...(env.ASSET_PREFIX === undefined ? {} : { prefix: env.ASSET_PREFIX }),
    s3: (location) =>
      new S3AssetStore({ client: new S3Client({ forcePathStyle: forcePathStyle(env) }), ...location }),
  });
}

/** The deps of an asset route, from the Lambda environment: the stack's bucket over one S3 client. */
export function assetApiDeps(source: Readonly<Record<string, string | undefined>>): AssetApiDeps {
  const configuration = readAwsEnvironment(source);
  const storage = assetStorage(configuration);
  return {
    assets: storage.assets,
    storage,
    settings: configuration.settings,
    logger: lambdaLogger(configuration.env.LOG_LEVEL),
    authenticate: apiGatewayAuthenticator(),
  };
}
