/*
 * The floors of bench/lambda-bundles.ts: per function, a bundle that imports
 * and constructs only the AWS SDK clients its handler uses and, when the
 * function's first call reaches AWS, makes one failing call with the first.
 */

/** The AWS SDK clients each function's handler uses: what its floor bundle imports and constructs. */
const CLIENTS = {
  dynamodb: ['DynamoDBClient', '@aws-sdk/client-dynamodb'],
  sqs: ['SQSClient', '@aws-sdk/client-sqs'],
  s3: ['S3Client', '@aws-sdk/client-s3'],
  logs: ['CloudWatchLogsClient', '@aws-sdk/client-cloudwatch-logs'],
  ecs: ['ECSClient', '@aws-sdk/client-ecs'],
  secretsManager: ['SecretsManagerClient', '@aws-sdk/client-secrets-manager'],
} as const;
export type Client = keyof typeof CLIENTS;

const TABLE: readonly Client[] = ['dynamodb'];
export const USES: Readonly<Record<string, readonly Client[]>> = {
  Healthz: [],
  GetOpenapi: [],
  GetDiscovery: TABLE,
  RefreshDiscovery: TABLE,
  RefreshDiscoverySchedule: TABLE,
  PutTarget: TABLE,
  ListTargets: TABLE,
  GetTarget: TABLE,
  DeleteTarget: TABLE,
  GetInventory: TABLE,
  ListRuns: TABLE,
  GetRun: TABLE,
  GetBatch: TABLE,
  UploadAsset: ['s3'],
  ListAssets: ['s3'],
  // Secrets Manager only for runs that carry plaintext passwords: not in the floor.
  SubmitRun: ['dynamodb', 's3', 'sqs'],
  SubmitBatch: ['dynamodb', 's3', 'sqs'],
  RetryBatch: ['dynamodb', 's3', 'sqs'],
  GetRunLogs: ['dynamodb', 'logs'],
  CancelRun: ['dynamodb', 'ecs', 'secretsManager'],
  DispatchRuns: ['dynamodb', 'sqs', 's3', 'ecs', 'secretsManager'],
  SettleDeadLetters: ['dynamodb', 'secretsManager'],
  EcsTaskStateChange: ['dynamodb', 'ecs', 'secretsManager'],
  ReconcileRuns: ['dynamodb', 'sqs', 'ecs', 'secretsManager'],
  PollBackends: ['dynamodb', 'secretsManager'],
};

/**
 * The one call a floor makes when its function's first call reaches AWS: with
 * the function's first client, to the same refused endpoint.
 */
export const FIRST_CALLS: Partial<Record<Client, readonly [command: string, input: string]>> = {
  dynamodb: [
    'GetItemCommand',
    "{ TableName: 'bench-runs', Key: { pk: { S: 'bench' }, sk: { S: 'bench' } } }",
  ],
  s3: ['ListObjectsV2Command', "{ Bucket: 'bench-assets' }"],
};

/**
 * A handler that constructs `clients` on its first call and, with `call`,
 * sends one request with the first of them (which fails: the endpoint
 * refuses); with no clients, the empty bundle.
 */
export function floorSource(clients: readonly Client[], call: boolean): string {
  const first = clients[0];
  const request = call && first !== undefined ? FIRST_CALLS[first] : undefined;
  if (call && request === undefined) throw new Error(`no first call for a floor over ${first ?? 'nothing'}`);
  const imports = clients.map((c, i) =>
    i === 0 && request !== undefined
      ? `import { ${CLIENTS[c][0]}, ${request[0]} } from '${CLIENTS[c][1]}';`
      : `import { ${CLIENTS[c][0]} } from '${CLIENTS[c][1]}';`,
  );
  const made = clients.map((c) => `new ${CLIENTS[c][0]}({})`).join(', ');
  const send =
    request === undefined
      ? ''
      : `\n  try { await (clients[0] as any).send(new ${request[0]}(${request[1]})); } catch {}`;
  return `${imports.join('\n')}
let clients: unknown[] | undefined;
export const handler = async () => {
  clients ??= [${made}];${send}
  return { statusCode: 200, body: String(clients.length) };
};
`;
}
