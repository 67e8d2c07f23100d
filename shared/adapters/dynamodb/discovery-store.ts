import { gunzipSync, gzipSync } from 'node:zlib';
import {
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { DiscoveredRow } from '../../domain/discovery.ts';
import type { HostingCloud } from '../../domain/target.ts';
import type { CloudListing, DiscoveryStore } from '../../ports/discovery-store.ts';
import { errorName, type Item, N, runTableOf, S } from './items.ts';

/**
 * What one cloud's compressed list may take: DynamoDB refuses items over
 * 400 KB (names and the other attributes included). JSON rows of ~300 bytes
 * gzip about tenfold, so this holds some ten thousand VMs per cloud.
 */
export const MAX_LISTING_BYTES = 380 * 1024;

const listingKey = (cloud: HostingCloud): Item => ({ pk: S(`DISCOVERY#${cloud}`), sk: S('DISCOVERY') });

/** Write only over an older listing (or none): of two refreshes racing, the newer list stays. */
const NOT_NEWER = 'attribute_not_exists(#at) OR #at <= :at';

export interface DynamoDiscoveryStoreOptions {
  /** The runs table (shared/domain/run-table.ts): each cloud's listing is one `DISCOVERY#<cloud>` item. */
  readonly tableName: string;
  readonly client?: DynamoDBClient;
}

/**
 * DiscoveryStore over the runs table: one item per cloud (`DISCOVERY#aws`,
 * sk `DISCOVERY`), its rows as gzip-compressed JSON, so reading a cloud is
 * one GetItem and a refresh replaces its list in one conditional PutItem —
 * readers never see half a list. The items carry none of the indexed
 * attributes (`list`, `state`, `batchId`), so no index sees them. A list too
 * large for one item is refused with the reason, which the cache keeps as
 * that cloud's error (with its previous list).
 *
 * @example
 * const store = new DynamoDiscoveryStore({ tableName: process.env.RUNS_TABLE });
 * await store.saveListing('aws', rows, '2026-12-01T10:00:00.000Z');
 * (await store.get('aws'))?.rows.length;
 */
export class DynamoDiscoveryStore implements DiscoveryStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: DynamoDiscoveryStoreOptions) {
    ({ client: this.#client, table: this.#table } = runTableOf(options));
  }

  async get(cloud: HostingCloud): Promise<CloudListing | undefined> {
    const { Item: item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key: listingKey(cloud), ConsistentRead: true }),
    );
    if (item === undefined) return undefined;
    const packed = item.rows?.B;
    const rows =
      packed === undefined ? [] : (JSON.parse(gunzipSync(packed).toString('utf8')) as DiscoveredRow[]);
    return {
      rows,
      ...(item.refreshedAt?.S === undefined ? {} : { refreshedAt: item.refreshedAt.S }),
      ...(item.error?.S === undefined ? {} : { error: item.error.S }),
    };
  }

  async saveListing(cloud: HostingCloud, rows: readonly DiscoveredRow[], refreshedAt: string): Promise<void> {
    const packed = gzipSync(JSON.stringify(rows));
    if (packed.byteLength > MAX_LISTING_BYTES) {
      throw new Error(
        `The ${rows.length} VMs listed take ${Math.ceil(packed.byteLength / 1024)} KB compressed, more than one cache item holds (${MAX_LISTING_BYTES / 1024} KB): narrow this cloud's discovery settings (regions, resource groups, zones)`,
      );
    }
    await unlessNewer(
      this.#client.send(
        new PutItemCommand({
          TableName: this.#table,
          Item: {
            ...listingKey(cloud),
            rows: { B: packed },
            vmCount: N(rows.length),
            refreshedAt: S(refreshedAt),
          },
          ConditionExpression: NOT_NEWER,
          ExpressionAttributeNames: { '#at': 'refreshedAt' },
          ExpressionAttributeValues: { ':at': S(refreshedAt) },
        }),
      ),
    );
  }

  async saveFailure(cloud: HostingCloud, error: string, at: string): Promise<void> {
    await unlessNewer(
      this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: listingKey(cloud),
          UpdateExpression: 'SET #error = :error',
          ConditionExpression: NOT_NEWER,
          // `error` is safer as a placeholder: DynamoDB reserves hundreds of words.
          ExpressionAttributeNames: { '#error': 'error', '#at': 'refreshedAt' },
          ExpressionAttributeValues: { ':error': S(error), ':at': S(at) },
        }),
      ),
    );
  }
}

/** A write that lost to a newer listing changes nothing and is no failure. */
async function unlessNewer(write: Promise<unknown>): Promise<void> {
  try {
    await write;
  } catch (error) {
    if (errorName(error) !== 'ConditionalCheckFailedException') throw error;
  }
}
