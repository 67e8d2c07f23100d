import { HOSTING_CLOUDS } from '../domain/target.ts';
import * as z from '../lib/zod.ts';

/** `GET /discovery` and `POST /discovery/refresh`: the cached list of discovered cloud VMs. */
const CloudDiscovery = z.object({
  count: z.int().check(z.describe('VMs listed by the last successful refresh')),
  refreshedAt: z.optional(z.string()).check(z.describe('when that was; absent before the first success')),
  error: z.optional(z.string()).check(z.describe('why the last refresh failed; the previous list is kept')),
});

const DiscoveredVm = z.object({
  id: z
    .string()
    .check(z.describe('the target id: `aws-<instance id>`, `azure-<group>-<name>`, `gcp-<zone>-<name>`')),
  cloud: z.enum(HOSTING_CLOUDS),
  name: z.string(),
  cloudId: z.string(),
  location: z.optional(z.string()),
  state: z.string().check(z.describe('as the cloud says it: running, stopped …')),
  privateAddress: z.optional(z.string()),
  publicAddress: z.optional(z.string()),
  os: z.enum(['linux', 'windows']),
  labels: z.optional(z.record(z.string(), z.string())),
  untargetableReason: z
    .optional(z.string())
    .check(z.describe('why it cannot be a target now; absent when it can')),
});

export const DiscoverySnapshotSchema = z
  .object({
    clouds: z.record(z.string(), CloudDiscovery).check(z.describe('per cloud named in discovery_clouds')),
    vms: z.array(DiscoveredVm),
  })
  .check(z.describe('Discovered cloud VMs, targetable by id like registered targets'));
