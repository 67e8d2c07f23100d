import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll } from 'vitest';
import { DynamoLaunchSlots } from '../../shared/adapters/dynamodb/launch-slots.ts';
import { openDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteLaunchSlots } from '../../shared/adapters/sqlite/launch-slots.ts';
import { createRunTable, oneRequestAtATime, useMoto } from '../support/moto.ts';
import { launchSlotsContract } from './launch-slots.contract.ts';

/*
 * The LaunchSlotStore contract against SQLite (two connections on one file,
 * as two processes would be) and DynamoDB on moto 5.2.1 (two stores, as two
 * Lambda containers).
 *
 * Where moto differs from DynamoDB: its conditional writes are not atomic
 * under concurrent requests (test/support/moto.ts oneRequestAtATime), so the
 * requests reach moto one at a time through one client; concurrent acquires
 * still interleave, and each is checked against the set as it stands.
 * DynamoDB makes each conditional UpdateItem atomic per item, which is all
 * the adapter relies on.
 */

const root = mkdtempSync(join(tmpdir(), 'rw-slots-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let files = 0;
launchSlotsContract('sqlite (two connections on one file)', async () => {
  files += 1;
  const path = join(root, `slots-${files}.sqlite`);
  const a = openDatabase(path);
  const b = openDatabase(path);
  return {
    slots: new SqliteLaunchSlots({ db: a }),
    other: new SqliteLaunchSlots({ db: b }),
    cleanup: async () => {
      a.close();
      b.close();
    },
  };
});

const moto = useMoto();
launchSlotsContract('dynamodb (moto)', async () => {
  const client = oneRequestAtATime(new DynamoDBClient(moto().clientConfig()));
  const tableName = `runs-${randomUUID()}`;
  await createRunTable(client, tableName);
  return {
    slots: new DynamoLaunchSlots({ client, tableName }),
    other: new DynamoLaunchSlots({ client, tableName }),
    cleanup: async () => {
      await client.send(new DeleteTableCommand({ TableName: tableName }));
      client.destroy();
    },
  };
});
