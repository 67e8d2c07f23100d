import { HOSTING_CLOUDS } from '../../domain/target.ts';
import { once } from '../../lib/once.ts';
import * as z from '../../lib/zod.ts';

/**
 * Cloud VM discovery's settings, spread into the one settings schema
 * (settings.ts). Lists take a YAML list or one comma-separated string.
 */
const items = once(() =>
  z.pipe(
    z.union([z.string(), z.array(z.string())]),
    z.transform((value: string | string[]) =>
      (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter((s) => s !== ''),
    ),
  ),
);

/** `items()` piped into a list of `item`, optional. */
const optionalItems = <T extends z.core.$ZodType<unknown, string>>(item: T) =>
  z.optional(z.pipe(items(), z.array(item)));

export const DISCOVERY_SETTINGS = {
  /** Which clouds to list VMs from (`aws`, `azure`, `gcp`); unset, none. */
  discovery_clouds: () => optionalItems(z.enum(HOSTING_CLOUDS)),
  /** EC2 regions to list; unset, the region of the environment (AWS_REGION). */
  discovery_aws_regions: () =>
    optionalItems(z.string().check(z.regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be a region such as eu-west-1'))),
  /** Azure resource groups to list; unset, the whole subscription (azure_subscription_id). */
  discovery_azure_resource_groups: () => optionalItems(z.string().check(z.minLength(1), z.maxLength(90))),
  /** GCE zones to list; unset, every zone of gcp_project_id (aggregated list). */
  discovery_gcp_zones: () =>
    optionalItems(
      z.string().check(z.regex(/^[a-z]+-[a-z]+\d+-[a-z]$/, 'must be a zone such as europe-west1-b')),
    ),
  /** Seconds between scheduled refreshes (unset: 900), after one at start; 0: at start and on POST /discovery/refresh only. */
  discovery_refresh_seconds: () => z.optional(z.int().check(z.minimum(0), z.maximum(86_400))),
};

/** The default schedule: the seeds' cloud tabs refresh about this often. */
export const DEFAULT_DISCOVERY_REFRESH_SECONDS = 900;
