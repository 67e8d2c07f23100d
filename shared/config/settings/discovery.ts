import * as z from 'zod';
import { HOSTING_CLOUDS } from '../../domain/target.ts';
import { once } from '../../lib/once.ts';

/**
 * Cloud VM discovery's settings, spread into the one settings schema
 * (settings.ts). Lists take a YAML list or one comma-separated string.
 */
const items = once(() =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((value) =>
      (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter((s) => s !== ''),
    ),
);

export const DISCOVERY_SETTINGS = {
  /** Which clouds to list VMs from (`aws`, `azure`, `gcp`); unset, none. */
  discovery_clouds: () =>
    items()
      .pipe(z.array(z.enum(HOSTING_CLOUDS)))
      .optional(),
  /** EC2 regions to list; unset, the region of the environment (AWS_REGION). */
  discovery_aws_regions: () =>
    items()
      .pipe(z.array(z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d$/, 'must be a region such as eu-west-1')))
      .optional(),
  /** Azure resource groups to list; unset, the whole subscription (azure_subscription_id). */
  discovery_azure_resource_groups: () =>
    items()
      .pipe(z.array(z.string().min(1).max(90)))
      .optional(),
  /** GCE zones to list; unset, every zone of gcp_project_id (aggregated list). */
  discovery_gcp_zones: () =>
    items()
      .pipe(z.array(z.string().regex(/^[a-z]+-[a-z]+\d+-[a-z]$/, 'must be a zone such as europe-west1-b')))
      .optional(),
  /** Seconds between scheduled refreshes (unset: 900), after one at start; 0: at start and on POST /discovery/refresh only. */
  discovery_refresh_seconds: () => z.int().min(0).max(86_400).optional(),
};

/** The default schedule: the seeds' cloud tabs refresh about this often. */
export const DEFAULT_DISCOVERY_REFRESH_SECONDS = 900;
