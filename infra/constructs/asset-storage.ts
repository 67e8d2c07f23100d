import { Duration, type RemovalPolicy } from 'aws-cdk-lib';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Bucket, type IBucket, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { privateBucketProps } from './private-bucket.ts';

export interface AssetStorageProps {
  /** DESTROY (dev) deletes the buckets with the stack only once they are empty: no auto-delete custom resource. */
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The bucket `POST /assets` writes and runs read (playbooks, scripts,
 * packages): private, SSL-only, S3-managed encryption, versioned so an
 * overwritten playbook can be recovered, with server access logs in a second
 * bucket that expires them after 90 days.
 */
export class AssetStorage extends Construct {
  readonly bucket: Bucket;
  readonly accessLogs: Bucket;

  constructor(scope: Construct, id: string, props: AssetStorageProps) {
    super(scope, id);
    const common = privateBucketProps(props.removalPolicy);
    this.accessLogs = new Bucket(this, 'AccessLogs', {
      ...common,
      // S3 log delivery writes with the bucket-owner-enforced setting when ACLs are off.
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
    });
    this.bucket = new Bucket(this, 'Assets', {
      ...common,
      versioned: true,
      // exactOptionalPropertyTypes rejects a Bucket for IBucket (CDK's optional props); the cast only widens.
      serverAccessLogsBucket: this.accessLogs as IBucket,
      serverAccessLogsPrefix: 'assets/',
      lifecycleRules: [{ noncurrentVersionExpiration: Duration.days(30) }],
    });
  }

  /** HeadObject/GetObject need s3:GetObject; ListBucket makes a missing key a 404 instead of a 403. */
  grantRead(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:GetObject'], resources: [this.bucket.arnForObjects('*')] }),
    );
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:ListBucket'], resources: [this.bucket.bucketArn] }),
    );
  }

  grantWrite(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: ['s3:PutObject'], resources: [this.bucket.arnForObjects('*')] }),
    );
  }
}
