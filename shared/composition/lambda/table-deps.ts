import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDiscoveryStore } from '../../adapters/dynamodb/discovery-store.ts';
import { DynamoRunStore } from '../../adapters/dynamodb/run-store.ts';
import { DynamoTargetStore } from '../../adapters/dynamodb/target-store.ts';
import { apiGatewayAuthenticator } from '../../http/api-gateway-auth.ts';
import { systemClock } from '../../ports/clock.ts';
import type { Logger } from '../../ports/logger.ts';
import { readAwsEnvironment } from '../aws-environment.ts';
import { buildStoredDiscovery } from '../discovery.ts';
import type { AwsConfiguration, TableApiDeps, TableDeps } from './kinds.ts';
import { lambdaLogger } from './logger.ts';

/** The runs table's stores over one DynamoDB client, with the discovered VMs each cloud's last refresh wrote there. */
export function tableStores(
  source: Readonly<Record<string, string | undefined>>,
  { env, settings }: AwsConfiguration,
  logger: Logger,
): Pick<TableApiDeps, 'store' | 'targets' | 'clock' | 'discovery'> {
  const client = new DynamoDBClient({});
  const clock = systemClock;
  const discovery = buildStoredDiscovery({
    settings,
    env: source,
    clock,
    logger,
    store: new DynamoDiscoveryStore({ client, tableName: env.RUNS_TABLE }),
  });
  return {
    store: new DynamoRunStore({ client, tableName: env.RUNS_TABLE, clock }),
    targets: new DynamoTargetStore({ client, tableName: env.RUNS_TABLE }),
    clock,
    ...(discovery === undefined ? {} : { discovery }),
  };
}

/**
 * The deps of a function over the runs table alone, from the Lambda
 * environment: the table's stores over one DynamoDB client, the settings and
 * the logger (the listing SDKs only in the refreshing functions' bundles:
 * RW_DISCOVERY_SDKS).
 */
export function tableDeps(source: Readonly<Record<string, string | undefined>>): TableDeps {
  const configuration = readAwsEnvironment(source);
  const logger = lambdaLogger(configuration.env.LOG_LEVEL);
  return { ...tableStores(source, configuration, logger), settings: configuration.settings, logger };
}

/** The deps of a table route: tableDeps and API Gateway's caller identity. */
export function tableApiDeps(source: Readonly<Record<string, string | undefined>>): TableApiDeps {
  return { ...tableDeps(source), authenticate: apiGatewayAuthenticator() };
}
