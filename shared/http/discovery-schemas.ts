import * as z from 'zod';
import { HOSTING_CLOUDS } from '../domain/target.ts';

/** `GET /discovery` and `POST /discovery/refresh`: the cached list of discovered cloud VMs. */
const CloudDiscovery = z.object({
  count: z.int().describe('VMs listed by the last successful refresh'),
  refreshedAt: z.string().optional().describe('when that was; absent before the first success'),
  error: z.string().optional().describe('why the last refresh failed; the previous list is kept'),
});

const DiscoveredVm = z.object({
  id: z.string().describe('the target id: `aws-<instance id>`, `azure-<group>-<name>`, `gcp-<zone>-<name>`'),
  cloud: z.enum(HOSTING_CLOUDS),
  name: z.string(),
  cloudId: z.string(),
  location: z.string().optional(),
  state: z.string().describe('as the cloud says it: running, stopped …'),
  privateAddress: z.string().optional(),
  publicAddress: z.string().optional(),
  os: z.enum(['linux', 'windows']),
  labels: z.record(z.string(), z.string()).optional(),
  untargetableReason: z.string().optional().describe('why it cannot be a target now; absent when it can'),
});

export const DiscoverySnapshotSchema = z
  .object({
    clouds: z.record(z.string(), CloudDiscovery).describe('per cloud named in discovery_clouds'),
    vms: z.array(DiscoveredVm),
  })
  .describe('Discovered cloud VMs, targetable by id like registered targets');
