/**
 * The runs table's layout: its keys, indexes and TTL attribute, and what each
 * kind of item keeps in it. The DynamoDB adapter (shared/adapters/dynamodb/)
 * implements the stores on it; the CDK stack (infra/constructs/run-table.ts),
 * the relay's IAM policy, bootstrap and the tests build the same table from
 * it. It lives in the domain, not the adapter, because infra may depend on the
 * domain only: it is plain data with no imports at all (no SDK), so the domain
 * stays pure and the CDK app loads no adapter code.
 */

/*
 * Table design (one table, string keys `pk` / `sk`):
 *
 * | item               | pk                    | sk            | other attributes                                   |
 * |--------------------|-----------------------|---------------|----------------------------------------------------|
 * | run                | `RUN#<id>`            | `RUN`         | id, state, version, createdAt, batchId?, list, body |
 * | idempotency record | `IDEMPOTENCY#<key>`   | `IDEMPOTENCY` | fingerprint, runId, expiresAt (TTL, epoch seconds) |
 * | account hold       | `ACCOUNT#<account>`   | `ACCOUNT`     | runId, since (the run holding a managed account)   |
 * | target             | `TARGET`              | `<id>`        | createdAt, body                                    |
 *
 * `body` is the run (or target) as JSON, so the domain model round-trips
 * exactly (no number or empty-map surprises) and can grow without a
 * migration; the other attributes are copies the keys, indexes and conditions
 * need. Runs spread over partitions by id. Targets share one partition, so a
 * Query lists them sorted by id without a Scan: the registry is small
 * (thousands of rows), far below a partition's limits.
 *
 * Global secondary indexes, all sorted by the run id (a ULID, so by creation
 * time) and projecting ALL attributes so a page is one Query:
 * - `runs-by-id`: partition `list` (always `run`) — every run, newest first.
 *   One partition takes every run write; its ~1,000 writes/s ceiling is far
 *   above a control plane's rate.
 * - `runs-by-state`: partition `state` — the state filter and the
 *   reconciler's non-terminal runs.
 * - `runs-by-batch`: partition `batchId` — sparse, batch runs only.
 * Index reads are eventually consistent (usually well under a second behind);
 * `getRun` is strongly consistent.
 */

export const RUN_INDEX = {
  byId: 'runs-by-id',
  byState: 'runs-by-state',
  byBatch: 'runs-by-batch',
} as const;
export const LIST_VALUE = 'run';
export const TTL_ATTRIBUTE = 'expiresAt';

interface KeyElement {
  readonly AttributeName: string;
  readonly KeyType: 'HASH' | 'RANGE';
}

interface IndexDefinition {
  readonly IndexName: string;
  readonly KeySchema: KeyElement[];
  readonly Projection: {
    readonly ProjectionType: 'ALL' | 'KEYS_ONLY' | 'INCLUDE';
    NonKeyAttributes?: string[];
  };
}

/**
 * Key schema, attributes, indexes and TTL attribute of the runs table, in
 * CreateTable's shape (with every field present, so the CDK side needs no
 * undefined checks).
 */
export interface RunTableDefinition {
  readonly keySchema: KeyElement[];
  readonly attributeDefinitions: {
    readonly AttributeName: string;
    readonly AttributeType: 'S' | 'N' | 'B';
  }[];
  readonly globalSecondaryIndexes: IndexDefinition[];
  /** Enable DynamoDB TTL on this attribute (epoch seconds) so expired idempotency records go away. */
  readonly timeToLiveAttribute: string;
}

/**
 * The runs table as DynamoRunStore and DynamoTargetStore expect it. Tests and bootstrap pass it to
 * CreateTable; the CDK stack maps the same values to its Table construct, so
 * the code and the deployed table cannot drift apart.
 *
 * @example
 * const def = runTableDefinition();
 * await ddb.send(new CreateTableCommand({
 *   TableName: 'runs', BillingMode: 'PAY_PER_REQUEST',
 *   KeySchema: def.keySchema, AttributeDefinitions: def.attributeDefinitions,
 *   GlobalSecondaryIndexes: def.globalSecondaryIndexes,
 * }));
 * await ddb.send(new UpdateTimeToLiveCommand({ TableName: 'runs',
 *   TimeToLiveSpecification: { AttributeName: def.timeToLiveAttribute, Enabled: true } }));
 */
export function runTableDefinition(): RunTableDefinition {
  const index = (name: string, partition: string): IndexDefinition => ({
    IndexName: name,
    KeySchema: [
      { AttributeName: partition, KeyType: 'HASH' },
      { AttributeName: 'id', KeyType: 'RANGE' },
    ],
    Projection: { ProjectionType: 'ALL' },
  });
  return {
    keySchema: [
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ],
    attributeDefinitions: ['pk', 'sk', 'id', 'list', 'state', 'batchId'].map((name) => ({
      AttributeName: name,
      AttributeType: 'S' as const,
    })),
    globalSecondaryIndexes: [
      index(RUN_INDEX.byId, 'list'),
      index(RUN_INDEX.byState, 'state'),
      index(RUN_INDEX.byBatch, 'batchId'),
    ],
    timeToLiveAttribute: TTL_ATTRIBUTE,
  };
}
