import type { RemovalPolicy } from 'aws-cdk-lib';
import { BlockPublicAccess, BucketEncryption, type BucketProps } from 'aws-cdk-lib/aws-s3';

/**
 * What every bucket of the stack shares: no public access, S3-managed
 * encryption, SSL only, and the stack's removal policy (DESTROY in dev deletes
 * a bucket only once it is empty: no auto-delete custom resource).
 *
 * @example
 * new Bucket(this, 'Assets', { ...privateBucketProps(props.removalPolicy), versioned: true });
 */
export const privateBucketProps = (removalPolicy: RemovalPolicy) =>
  ({
    blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
    encryption: BucketEncryption.S3_MANAGED,
    enforceSSL: true,
    removalPolicy,
  }) satisfies BucketProps;
