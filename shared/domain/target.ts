import { once } from '../lib/once.ts';
import * as z from '../lib/zod.ts';
import { displayName } from './display-text.ts';

/**
 * The target registry's model. A target is what a run acts on: a VM (SSH/WinRM),
 * a Kubernetes cluster, a database, or a row that can never be a target
 * (a virtual desktop, a VM known only by hypervisor node + VMID).
 */
export const CLOUDS = ['aws', 'azure', 'gcp', 'oci', 'local'] as const;
export type Cloud = (typeof CLOUDS)[number];
/** Clouds that host managed clusters and databases in a private VPC. */
export const HOSTING_CLOUDS = ['aws', 'azure', 'gcp'] as const;
export type HostingCloud = (typeof HOSTING_CLOUDS)[number];

export const isHostingCloud = (cloud: Cloud): cloud is HostingCloud =>
  (HOSTING_CLOUDS as readonly string[]).includes(cloud);

const targetId = z
  .string()
  .check(
    z.minLength(1),
    z.maxLength(128),
    z.regex(
      /^[A-Za-z0-9][A-Za-z0-9._:-]*$/,
      'letters, digits, and . _ : - only, starting with a letter or digit',
    ),
  );
export const TargetIdSchema = targetId;

/*
 * The target body schemas are built on first use (z.lazy), not when this
 * module loads: most functions import target.ts for its types and rules
 * (untargetableReason, the cloud lists), and only PUT /targets and the
 * OpenAPI document parse bodies with them. Built at load, run.ts's and these
 * cost every cold start about 13 ms of CPU on the bench machine (measured
 * with classic zod). `TargetIdSchema` stays eager:
 * the target routes parse their path parameter on every first call.
 */
/** The fields every kind shares, built once, on the first body schema's use: one instance of each, as before. */
const shared = once(() => ({
  base: {
    name: displayName(200),
    cloud: z.enum(CLOUDS),
    labels: z.optional(z.record(z.string().check(z.maxLength(63)), z.string().check(z.maxLength(256)))),
  },
  port: z.int().check(z.minimum(1), z.maximum(65535)),
}));

/** A kind's body, built on first use: the fields every kind shares, its `kind`, then its own `fields`. */
const kindBody = <K extends string, F extends z.core.$ZodShape>(kind: K, fields: () => F) =>
  z.lazy(() => z.strictObject({ ...shared().base, kind: z.literal(kind), ...fields() }));

export const VmTargetSchema = kindBody('vm', () => ({
  /** Host name or IP the runner connects to. Absent for VMs known only by node + VMID. */
  address: z.optional(z.textBetween(1, 253)),
  port: z.optional(shared().port),
  connection: z._default(z.enum(['ssh', 'winrm', 'local']), 'ssh'),
  os: z.optional(z.enum(['linux', 'windows'])),
  hypervisorGroup: z.optional(z.textBetween(1, 100)),
  /** Proxmox / Nutanix deployments record a node + VMID rather than an address. */
  node: z.optional(z.textBetween(1, 100)),
  vmid: z.optional(z.int().check(z.minimum(0))),
  sshUser: z.optional(z.textBetween(1, 64)),
}));

export const ClusterTargetSchema = kindBody('cluster', () => ({
  provider: z.enum(['eks', 'aks', 'gke', 'kubeconfig', 'k3s', 'other']),
  /** Name of the secret holding the kubeconfig or cloud credentials; never the credential itself. */
  credentialsRef: z.optional(z.textBetween(1, 256)),
  region: z.optional(z.textBetween(1, 64)),
  clusterName: z.optional(z.textBetween(1, 200)),
}));

export const DatabaseTargetSchema = kindBody('database', () => ({
  engine: z.enum(['postgresql', 'mysql', 'mariadb', 'mssql', 'oracle', 'mongodb']),
  endpoint: z.strictObject({ host: z.textBetween(1, 253), port: z.optional(shared().port) }),
  source: z.enum(['provisioned', 'registered']),
  /** Password Safe managed account checked out just in time (registered databases). */
  managedAccount: z.optional(z.textBetween(1, 256)),
  /** Secret holding the admin credential of a provisioned database. */
  credentialsRef: z.optional(z.textBetween(1, 256)),
}));

export const VirtualDesktopTargetSchema = kindBody('virtual_desktop', () => ({}));

export const TargetBodySchema = z.lazy(() =>
  z.discriminatedUnion('kind', [
    VmTargetSchema.def.getter(),
    ClusterTargetSchema.def.getter(),
    DatabaseTargetSchema.def.getter(),
    VirtualDesktopTargetSchema.def.getter(),
  ]),
);
export type TargetBody = z.infer<typeof TargetBodySchema>;

export type Target = TargetBody & {
  readonly id: string;
  readonly createdAt: string;
  readonly updatedAt: string;
};
export type VmTarget = Extract<Target, { kind: 'vm' }>;
export type ClusterTarget = Extract<Target, { kind: 'cluster' }>;
export type DatabaseTarget = Extract<Target, { kind: 'database' }>;

/** A discovered VM that cannot be a target carries why in this label (shared/domain/discovery.ts). */
export const UNTARGETABLE_LABEL = 'remote-worker/untargetable';

/** Engines some runner image carries modules for. */
const RUNNABLE_ENGINES: ReadonlySet<DatabaseTarget['engine']> = new Set([
  'postgresql',
  'mysql',
  'mariadb',
  'mssql',
]);

/**
 * Why a registry row can never be a target, or undefined when it can.
 * Computed by the same rule the run endpoints enforce.
 */
export function untargetableReason(target: Target): string | undefined {
  switch (target.kind) {
    case 'virtual_desktop':
      return 'A virtual desktop is a seat, not a host: no Ansible target exists behind it';
    case 'vm':
      if (target.address === undefined) {
        const kept = target.labels?.[UNTARGETABLE_LABEL];
        if (kept !== undefined) return kept;
        return target.node !== undefined || target.vmid !== undefined
          ? 'This VM is recorded only by node + VMID, not an address: target it through its hypervisor group instead'
          : 'This VM has no address to connect to';
      }
      return undefined;
    case 'database':
      if (!RUNNABLE_ENGINES.has(target.engine)) {
        return `No runner carries modules for the ${target.engine} engine`;
      }
      if (target.cloud === 'oci')
        return 'No runner resolves for oci: OCI-hosted databases cannot be targeted';
      return undefined;
    case 'cluster':
      if (target.cloud === 'oci') return 'No runner resolves for oci: OCI-hosted clusters cannot be targeted';
      return undefined;
  }
}
