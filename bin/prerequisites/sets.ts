/**
 * Every system package the project needs, in two sets, and nothing anywhere
 * else: `npm start` (prestart), `npm test` (pretest) and so `.ci/run` all go
 * through bin/prerequisites.ts, which reads these.
 *
 * - {@link START}: what local mode needs to run a play on this host.
 * - {@link TEST}: what the suite drives for real, on top of START.
 *
 * test/integration/prerequisites.test.ts scans test/, tools/, runners/ and
 * shared/ for the programs and Python modules they start and fails when one
 * is in neither set, and when an entry here is used by nothing.
 *
 * @example
 * const names = [...START, ...TEST].flatMap((p) => p.commands ?? []); // ['ansible-playbook', 'ssh', …]
 */

/** The package managers a missing prerequisite is named for. `pip` is the Python on PATH's. */
export type Manager = 'apt' | 'dnf' | 'apk' | 'brew' | 'pip';

export interface Prerequisite {
  /** What an operator reads: the Debian package name where there is one. */
  readonly name: string;
  /** Why the project needs it: printed before an install, so the operator knows what is coming. */
  readonly why: string;
  /** Programs that must be on PATH. */
  readonly commands?: readonly string[];
  /** Paths that must exist; one `*` stands for any directory name (a version). */
  readonly files?: readonly string[];
  /** Names the suite starts that are not on PATH (found under {@link files}). */
  readonly alsoProvides?: readonly string[];
  /** Modules that must be importable by `python` (found with importlib's find_spec: nothing is imported). */
  readonly python?: { readonly interpreter: string; readonly modules: readonly string[] };
  /** Ansible collections that must be installed for the Python that runs ansible-playbook. */
  readonly collections?: readonly string[];
  /**
   * For an entry the suite never names itself: the program (or file) that
   * needs it. The prerequisites test accepts such an entry when that program
   * is itself used.
   */
  readonly usedBy?: string;
  /** The packages per manager; a manager without an entry has no package for it (said so when it stops). */
  readonly packages: Partial<Record<Manager, readonly string[]>>;
}

/** A file podman needs on hosts like CI's; written when absent, never overwritten. */
export interface ConfigFile {
  readonly path: string;
  readonly content: string;
  readonly why: string;
  /** Each must match the file when it exists (someone else wrote it): else the run stops with {@link content}. */
  readonly required: readonly RegExp[];
}

export const START: readonly Prerequisite[] = [
  {
    name: 'node',
    why: 'Node.js 20.19+ with npm and npx, where the README starts',
    commands: ['node', 'npm', 'npx'],
    packages: {},
  },
  {
    name: 'ansible',
    why: 'ansible-playbook for local runs, with the collections the examples use (kubernetes.core, community.postgresql …): about 260 MB',
    commands: ['ansible-playbook', 'ansible-inventory'],
    collections: ['kubernetes.core', 'community.postgresql'],
    packages: { apt: ['ansible'], dnf: ['ansible'], apk: ['ansible'], brew: ['ansible'] },
  },
  {
    name: 'openssh-client',
    // macOS ships ssh: brew has nothing to add.
    why: "ssh, Ansible's default connection to a VM target, and ssh-keygen",
    commands: ['ssh', 'ssh-keygen'],
    usedBy: 'ansible-playbook',
    packages: { apt: ['openssh-client'], dnf: ['openssh-clients'], apk: ['openssh-client'], brew: [] },
  },
];

/**
 * An entry of {@link TEST}, which is Debian only: its name is the Debian
 * packages that provide it (`'runc, catatonit, iptables'`), so they are not
 * written twice.
 */
function debian(entry: Omit<Prerequisite, 'packages'>): Prerequisite {
  return { ...entry, packages: { apt: entry.name.split(', ') } };
}

/**
 * Debian only: the suite drives Debian's PostgreSQL layout, Debian's
 * /usr/bin/python3 (the one Debian's ansible runs) and podman with runc.
 */
export const TEST: readonly Prerequisite[] = [
  debian({
    name: 'postgresql',
    why: 'a throwaway PostgreSQL server for the database play (initdb, pg_ctl, psql)',
    files: ['/usr/lib/postgresql/*/bin/initdb'],
    alsoProvides: ['initdb', 'pg_ctl', 'psql'],
  }),
  debian({
    name: 'python3-psycopg2',
    why: "the driver community.postgresql needs under Debian's /usr/bin/python3",
    python: { interpreter: '/usr/bin/python3', modules: ['psycopg2'] },
    usedBy: 'ansible-playbook',
  }),
  debian({
    name: 'openssh-server',
    why: 'a real sshd the troubleshooting test makes a play fail to authenticate against (a refused key)',
    files: ['/usr/sbin/sshd'],
    alsoProvides: ['sshd'],
  }),
  debian({
    name: 'openssl',
    why: 'private CAs and certificates for the loopback HTTPS fakes',
    commands: ['openssl'],
  }),
  debian({
    name: 'podman',
    why: 'a real container engine for the image and container tests',
    commands: ['podman'],
  }),
  debian({
    name: 'runc, catatonit, iptables',
    // crun fails on these hosts: "cgroups in hybrid mode not supported".
    why: "podman's runtime (runc), its --init (catatonit) and the default bridge network's NAT (iptables)",
    commands: ['runc', 'catatonit', 'iptables'],
    usedBy: 'podman',
  }),
  debian({
    name: 'chromium',
    why: "the headless browser the console's tests drive through playwright-core (no browser download)",
    files: ['/usr/bin/chromium'],
    usedBy: 'console/test/browser.ts',
  }),
  debian({
    name: 'debootstrap',
    why: 'the Debian base image the runner images start from, since no image registry is reachable',
    commands: ['debootstrap'],
    usedBy: 'runners/base/build-base-image.sh',
  }),
  debian({
    name: 'kubectl',
    // Not in Debian's archive (kubernetes-client there is 1.20): this machine kind ships Google's.
    why: "the real kubectl the cluster-auth tests drive (Google's dispatcher package, on these machines from the start)",
    commands: ['kubectl'],
  }),
  debian({
    name: 'util-linux',
    why: 'runuser (PostgreSQL as its own user), unshare (an offline cdk synth), flock (one image build at a time), setsid (a process group of its own, as the shim gives the tool)',
    commands: ['runuser', 'unshare', 'flock', 'setsid'],
  }),
  debian({
    name: 'coreutils, bash, dash',
    why: 'the shell and the tools the tests script with (base64 and od make the wrapped dumps redaction must catch)',
    commands: ['sh', 'bash', 'sleep', 'sha1sum', 'cat', 'rm', 'id', 'true', 'base64', 'od'],
  }),
  {
    name: 'python3 with moto, cfn-lint, openapi-spec-validator',
    // The python3 first on PATH (pyenv's on these machines), not Debian's: moto ships with it.
    why: 'moto (the AWS emulator), cfn-lint 1.x (the synthesized templates) and openapi-spec-validator',
    commands: ['python3'],
    python: { interpreter: 'python3', modules: ['moto', 'cfnlint', 'openapi_spec_validator'] },
    packages: { pip: ['moto[server]>=5,<6', 'cfn-lint>=1,<2', 'openapi-spec-validator'] },
  },
];

/** podman's defaults exceed these hosts: a nofile ulimit above the hard limit of 20000, crun, systemd cgroups. */
export const TEST_CONFIG: readonly ConfigFile[] = [
  {
    path: '/etc/containers/containers.conf',
    content: [
      '[containers]',
      'default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]',
      '[engine]',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      '',
    ].join('\n'),
    why: 'podman with runc, cgroupfs and ulimits within the host\'s hard limits ("setrlimit RLIMIT_NOFILE: Operation not permitted" otherwise)',
    required: [/^\s*runtime\s*=\s*"runc"/m, /^\s*cgroup_manager\s*=\s*"cgroupfs"/m, /nofile=/],
  },
];

/**
 * Built after the packages, before the suite: the base image and the local
 * stand-ins for the runner images' public inputs (idempotent; about 90 s the
 * first time). The tests would build them on first use too, but inside a
 * hook's time budget and with nothing said while they wait.
 */
export const TEST_IMAGES = 'runners/base/build-local-images.sh';
