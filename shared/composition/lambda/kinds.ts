import type { AppDeps } from '../../app/deps.ts';
import type { HttpDeps } from '../../http/handler.ts';
import type { readAwsEnvironment } from '../aws-environment.ts';

/*
 * What each kind of Lambda function may use: its handler factories are typed
 * by these, so a factory that reaches for more than its kind's composition
 * builds does not compile. Local mode passes its whole ApiDeps, a superset.
 */

/** Routes that touch no AWS service and read no settings: /healthz, /openapi.json, discovery in a deployed stack. */
export type BareApiDeps = HttpDeps;

/** Functions over the runs table alone: the scheduled discovery refresh, and the table routes below. */
export type TableDeps = Pick<AppDeps, 'store' | 'targets' | 'settings' | 'clock' | 'discovery' | 'logger'>;

/** Routes over the runs table alone: targets, runs, batches, the inventory. */
export type TableApiDeps = HttpDeps & TableDeps;

/** Routes over the asset bucket alone: upload, list. */
export type AssetApiDeps = HttpDeps & Pick<AppDeps, 'assets' | 'storage' | 'settings'>;

/** The Lambda environment and settings, read and validated once per cold start. */
export type AwsConfiguration = ReturnType<typeof readAwsEnvironment>;
