import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoRunStore } from '../../shared/adapters/dynamodb/run-store.ts';
import { openDatabase } from '../../shared/adapters/sqlite/database.ts';
import { SqliteRunStore } from '../../shared/adapters/sqlite/run-store.ts';
import { createRunTable, useMoto } from '../support/moto.ts';
import { relayClaimContract } from './relay-claim.contract.ts';

/*
 * The relay claim and the batched read against SQLite and DynamoDB on moto
 * 5.2.1. moto evaluates UpdateItem conditions, ALL_NEW and (on a failed
 * condition) ALL_OLD as AWS documents them; nothing here depends on where
 * moto differs from AWS.
 */

relayClaimContract('sqlite', async () => {
  const db = openDatabase(':memory:');
  return { store: new SqliteRunStore({ db }), cleanup: async () => void db.close() };
});

const moto = useMoto();

relayClaimContract('dynamodb (moto)', async () => {
  const client = new DynamoDBClient(moto().clientConfig());
  const tableName = `runs-${randomUUID()}`;
  await createRunTable(client, tableName);
  return {
    store: new DynamoRunStore({ client, tableName }),
    cleanup: async () => {
      await client.send(new DeleteTableCommand({ TableName: tableName }));
      client.destroy();
    },
  };
});
