import { runTableDefinition } from '../../shared/domain/run-table.ts';

/**
 * The least-privilege IAM policy the standalone relay agent needs, as a
 * policy document. The CDK stack turns it into the relay's role or user
 * (`iam.PolicyDocument.fromJson(relayPolicyDocument({ … }))`); ARNs may be
 * CDK tokens, since they are only concatenated.
 *
 * Exactly the calls its code makes, on its own resources only:
 * - SQS (SqsWorkQueue): ReceiveMessage, DeleteMessage, ChangeMessageVisibility
 *   on the relay queue. It never sends: the dispatcher does.
 * - DynamoDB runs table (DynamoRunStore): GetItem (run, target), PutItem
 *   (the conditional run write), and Query on the state index alone
 *   (`listActiveRuns`, to adopt its runs after a restart).
 * - DynamoDB logs table (DynamoLogStore.append): UpdateItem (the seq counter)
 *   and PutItem. It never reads its logs back.
 * - Secrets Manager: GetSecretValue on secrets whose name starts with the
 *   relay's prefix, and nothing when no prefix is configured.
 *
 * A queue or table encrypted with a customer-managed KMS key also needs
 * kms:Decrypt / kms:GenerateDataKey on that key; the AWS-owned default needs nothing.
 *
 * @example
 * const doc = relayPolicyDocument({
 *   queueArn: relayQueue.queueArn, tableArn: runs.tableArn,
 *   secrets: { partition: 'aws', region: 'eu-west-1', account: '123456789012', namePrefix: 'relay/' },
 * });
 */
export interface RelayPolicyInput {
  readonly queueArn: string;
  readonly tableArn: string;
  /** Default: the runs table. */
  readonly logsTableArn?: string;
  readonly secrets?: {
    readonly partition?: string;
    readonly region: string;
    readonly account: string;
    /** Name prefix (`relay/`); the agent's RELAY_SECRET_PREFIX should be the same. */
    readonly namePrefix: string;
  };
}

export interface PolicyStatement {
  readonly Sid: string;
  readonly Effect: 'Allow';
  readonly Action: readonly string[];
  readonly Resource: readonly string[];
}

export interface PolicyDocument {
  readonly Version: '2012-10-17';
  readonly Statement: readonly PolicyStatement[];
}

/** The index `listActiveRuns` queries: the one partitioned by run state. */
function stateIndexName(): string {
  const index = runTableDefinition().globalSecondaryIndexes.find(
    (i) => i.KeySchema.find((k) => k.KeyType === 'HASH')?.AttributeName === 'state',
  );
  if (index === undefined) throw new Error('The runs table has no index by state');
  return index.IndexName;
}

export function relayPolicyDocument(input: RelayPolicyInput): PolicyDocument {
  const { queueArn, tableArn } = input;
  const logsTableArn = input.logsTableArn ?? tableArn;
  const statements: PolicyStatement[] = [
    {
      Sid: 'RelayQueue',
      Effect: 'Allow',
      Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'],
      Resource: [queueArn],
    },
  ];
  if (logsTableArn === tableArn) {
    statements.push({
      Sid: 'RunsAndLogs',
      Effect: 'Allow',
      Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
      Resource: [tableArn],
    });
  } else {
    statements.push(
      {
        Sid: 'Runs',
        Effect: 'Allow',
        Action: ['dynamodb:GetItem', 'dynamodb:PutItem'],
        Resource: [tableArn],
      },
      {
        Sid: 'Logs',
        Effect: 'Allow',
        Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
        Resource: [logsTableArn],
      },
    );
  }
  statements.push({
    Sid: 'ActiveRuns',
    Effect: 'Allow',
    Action: ['dynamodb:Query'],
    Resource: [`${tableArn}/index/${stateIndexName()}`],
  });
  if (input.secrets !== undefined) {
    const { partition = 'aws', region, account, namePrefix } = input.secrets;
    if (namePrefix === '')
      throw new RangeError('secrets.namePrefix must not be empty: it would allow every secret');
    statements.push({
      Sid: 'RunSecrets',
      Effect: 'Allow',
      Action: ['secretsmanager:GetSecretValue'],
      // Secrets Manager appends `-XXXXXX` to every secret's ARN, hence the trailing wildcard.
      Resource: [`arn:${partition}:secretsmanager:${region}:${account}:secret:${namePrefix}*`],
    });
    statements.push({
      Sid: 'EndedRunSecrets',
      Effect: 'Allow',
      // A relay run's plaintext password is a per-run secret (`<prefix>runs/<run id>/…`): the relay ends the run, so it deletes it.
      Action: ['secretsmanager:DeleteSecret'],
      Resource: [`arn:${partition}:secretsmanager:${region}:${account}:secret:${namePrefix}runs/*`],
    });
  }
  return { Version: '2012-10-17', Statement: statements };
}
