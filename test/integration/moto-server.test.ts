import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { CreateTableCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.ts';

/*
 * test/support/moto_server.py, which every moto of the tests and benches runs:
 * it routes each service's requests as moto does while looking each host up
 * once, and it exits when its stdin closes.
 */
const SUPPORT = join(import.meta.dirname, '../support');
const SERVER = join(SUPPORT, 'moto_server.py');

describe('moto_server.py', () => {
  it('applies its lookup cache to the installed moto', () => {
    // A moto whose dispatcher changed would leave the cache out silently: this says so instead.
    const probe = [
      'import moto_server',
      'from moto import backends',
      'from moto.moto_server.werkzeug_app import DomainDispatcherApplication as D',
      'before = D.get_backend_for_host',
      'moto_server.cache_service_lookup()',
      'print(D.get_backend_for_host is not before, backends.list_of_moto_modules() is backends.list_of_moto_modules())',
    ].join('\n');
    const out = execFileSync('python3', ['-c', probe], { cwd: SUPPORT, encoding: 'utf8' });
    expect(out.trim()).toBe('True True');
  });

  it('answers each service from its own backend, turn by turn, and exits when its stdin closes', async () => {
    const port = await freePort();
    const child = spawn('python3', [SERVER, '-H', '127.0.0.1', '-p', String(port)], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const config = {
      endpoint: `http://127.0.0.1:${port}`,
      region: 'us-east-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      maxAttempts: 1,
    };
    const dynamodb = new DynamoDBClient(config);
    const sqs = new SQSClient(config);
    const s3 = new S3Client({ ...config, forcePathStyle: true });
    try {
      for (let i = 0; ; i++) {
        try {
          await sqs.send(new ListQueuesCommand({}));
          break;
        } catch (error) {
          if (i > 200) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      await dynamodb.send(
        new CreateTableCommand({
          TableName: 'one',
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      await sqs.send(new CreateQueueCommand({ QueueName: 'two' }));
      await s3.send(new CreateBucketCommand({ Bucket: 'three' }));
      // Twice round, so the second of each is answered from the cached lookup.
      for (let round = 0; round < 2; round++) {
        expect((await dynamodb.send(new ListTablesCommand({}))).TableNames).toEqual(['one']);
        expect((await sqs.send(new ListQueuesCommand({}))).QueueUrls?.map((u) => u.split('/').pop())).toEqual(
          ['two'],
        );
        expect((await s3.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name)).toEqual(['three']);
      }
    } finally {
      dynamodb.destroy();
      sqs.destroy();
      s3.destroy();
    }
    const exited = once(child, 'exit');
    child.stdin.end();
    const [code, signal] = await exited;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });
});
