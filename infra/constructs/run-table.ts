import { type RemovalPolicy, Stack } from 'aws-cdk-lib';
import {
  type Attribute,
  AttributeType,
  BillingMode,
  ProjectionType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { runTableDefinition } from '../../shared/domain/run-table.ts';

export interface RunTableProps {
  readonly protect: boolean;
  readonly removalPolicy: RemovalPolicy;
}

/** DynamoDB actions of DynamoRunStore, split by what a reader and a writer need. */
const READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:DescribeTable'];
/** TransactWriteItems is authorised per item as PutItem / UpdateItem / DeleteItem / ConditionCheckItem. */
const WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
];

/**
 * The runs table, built from `runTableDefinition()` (shared/domain/run-table.ts:
 * plain data with no imports, so the stack depends on the domain only and the
 * CDK app loads no SDK or adapter code) so the deployed keys, indexes and TTL
 * attribute are the ones DynamoRunStore and DynamoTargetStore use.
 * On-demand, point-in-time recovery, AWS-managed KMS encryption, TTL, and
 * deletion protection wherever `protect` is set (every environment but dev).
 */
export class RunTable extends Construct {
  readonly table: Table;
  readonly timeToLiveAttribute: string;
  readonly indexNames: readonly string[];

  constructor(scope: Construct, id: string, props: RunTableProps) {
    super(scope, id);
    const def = runTableDefinition();
    const types = new Map(def.attributeDefinitions.map((a) => [a.AttributeName, a.AttributeType]));
    const attribute = (name: string | undefined): Attribute => {
      const type = name === undefined ? undefined : types.get(name);
      if (name === undefined || type === undefined) {
        throw new Error(`runTableDefinition() names key attribute ${name} without a definition`);
      }
      return {
        name,
        type:
          type === 'N' ? AttributeType.NUMBER : type === 'B' ? AttributeType.BINARY : AttributeType.STRING,
      };
    };
    const keyOf = (schema: readonly { AttributeName?: string; KeyType?: string }[] | undefined) => {
      const hash = schema?.find((k) => k.KeyType === 'HASH')?.AttributeName;
      const range = schema?.find((k) => k.KeyType === 'RANGE')?.AttributeName;
      return {
        partitionKey: attribute(hash),
        ...(range === undefined ? {} : { sortKey: attribute(range) }),
      };
    };

    this.timeToLiveAttribute = def.timeToLiveAttribute;
    this.table = new Table(this, 'Table', {
      ...keyOf(def.keySchema),
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: TableEncryption.AWS_MANAGED,
      timeToLiveAttribute: def.timeToLiveAttribute,
      deletionProtection: props.protect,
      removalPolicy: props.removalPolicy,
    });
    const indexNames: string[] = [];
    for (const gsi of def.globalSecondaryIndexes) {
      if (gsi.IndexName === undefined) throw new Error('runTableDefinition() has an index without a name');
      const projection = gsi.Projection?.ProjectionType ?? 'ALL';
      this.table.addGlobalSecondaryIndex({
        indexName: gsi.IndexName,
        ...keyOf(gsi.KeySchema),
        projectionType:
          projection === 'KEYS_ONLY'
            ? ProjectionType.KEYS_ONLY
            : projection === 'INCLUDE'
              ? ProjectionType.INCLUDE
              : ProjectionType.ALL,
        ...(projection === 'INCLUDE' ? { nonKeyAttributes: gsi.Projection?.NonKeyAttributes ?? [] } : {}),
      });
      indexNames.push(gsi.IndexName);
    }
    this.indexNames = indexNames;
  }

  /** Each named index: no `index/*` wildcard, so a new index is granted deliberately. */
  indexArns(): string[] {
    const stack = Stack.of(this);
    return this.indexNames.map((name) =>
      stack.formatArn({
        service: 'dynamodb',
        resource: 'table',
        resourceName: `${this.table.tableName}/index/${name}`,
      }),
    );
  }

  private resources(): string[] {
    return [this.table.tableArn, ...this.indexArns()];
  }

  grantRead(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: READ_ACTIONS, resources: this.resources() }),
    );
  }

  /** Writes go to the table only: indexes cannot be written. */
  grantWrite(grantee: IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions: WRITE_ACTIONS, resources: [this.table.tableArn] }),
    );
  }
}
