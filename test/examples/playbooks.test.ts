import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { extname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';
import { RUN_KINDS } from '../../shared/domain/run.ts';

/**
 * The examples a user copies: every playbook passes `ansible-playbook
 * --syntax-check` with the collections it uses (Debian's `ansible` package
 * carries them: kubernetes.core, community.postgresql, community.mysql,
 * community.general), and every sample's header names its run kind and
 * variables. A syntax check resolves every module name, so a misspelt or
 * missing module fails it; arguments and templates are not evaluated.
 */

const execFileAsync = promisify(execFile);
const REPO = join(import.meta.dirname, '../..');
const EXAMPLES = join(REPO, 'examples/playbooks');
const COLLECTIONS = ['kubernetes.core', 'community.postgresql', 'community.mysql', 'community.general'];
const INSTALL_HINT =
  "install Debian's ansible package, which carries the collections the examples use: " +
  'DEBIAN_FRONTEND=noninteractive apt-get install -y ansible';

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

const samples = walk(EXAMPLES)
  .map((path) => relative(EXAMPLES, path))
  .filter((path) => ['.yml', '.yaml', '.sh', '.ps1'].includes(extname(path)))
  .sort();

/** A playbook is a YAML list of plays; anything else YAML here is a k8s_op asset (a manifest or values). */
function isPlaybook(path: string): boolean {
  if (!/\.ya?ml$/.test(path)) return false;
  const [first] = parseAllDocuments(readFileSync(join(EXAMPLES, path), 'utf8'));
  return Array.isArray(first?.toJS());
}

const playbooks = samples.filter(isPlaybook);

interface Header {
  readonly kind: string;
  readonly variables: string;
}

/** `# Run kind: <kind> …` and `# Variables: …` as the first lines (after a shebang). */
function headerOf(path: string): Header | undefined {
  const lines = readFileSync(join(EXAMPLES, path), 'utf8').split('\n');
  const start = lines[0]?.startsWith('#!') ? 1 : 0;
  const kind = /^# Run kind: ([a-z0-9_]+)\b/.exec(lines[start] ?? '')?.[1];
  const rest = lines.slice(start + 1).findIndex((l) => !l.startsWith('#'));
  const comment = lines.slice(start + 1, rest < 0 ? undefined : start + 1 + rest);
  const variables = /^# Variables: (.+)$/.exec(comment.find((l) => l.startsWith('# Variables: ')) ?? '')?.[1];
  return kind === undefined || variables === undefined ? undefined : { kind, variables };
}

/** Where a sample lives says what kind of run it is (the Portainer Edge sample is the VM exception). */
function expectedKind(path: string): readonly string[] {
  if (path.startsWith('k8s/ops/')) return ['k8s_op'];
  if (path.startsWith('k8s/')) return ['cluster_play'];
  if (path.startsWith('database/')) return ['database_play'];
  if (path === 'portainer/edge-environment.yml') return ['vm'];
  if (path.startsWith('portainer/')) return ['portainer'];
  if (path.startsWith('k3s/') || path.startsWith('scripts/')) return ['vm'];
  return RUN_KINDS;
}

/** One module of each collection the examples use: a syntax check resolves it only when the collection is there. */
const COLLECTION_PROBE = [
  '- hosts: localhost',
  '  gather_facts: false',
  '  tasks:',
  '    - kubernetes.core.k8s_info: {}',
  '    - community.postgresql.postgresql_info: {}',
  '    - community.mysql.mysql_info: {}',
  '    - community.general.ini_file: {}',
  '',
].join('\n');

function ansibleProblem(dir: string): string | undefined {
  try {
    execFileSync('ansible-playbook', ['--version'], { stdio: 'ignore' });
  } catch {
    return `ansible-playbook is not on PATH: ${INSTALL_HINT}`;
  }
  const probe = join(dir, 'collections-probe.yml');
  writeFileSync(probe, COLLECTION_PROBE);
  try {
    execFileSync('ansible-playbook', ['--syntax-check', '-i', 'localhost,', probe], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ANSIBLE_NOCOLOR: '1' },
    });
    return undefined;
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '');
    const missing = COLLECTIONS.filter((c) => stderr.includes(`'${c}.`));
    return `ansible-playbook is there but not the collections ${missing.join(', ') || COLLECTIONS.join(', ')}: ${INSTALL_HINT}`;
  }
}

let scratch: string;
let inventory: string;
let ansibleMissing: string | undefined;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-examples-'));
  inventory = join(scratch, 'inventory.json');
  writeFileSync(inventory, JSON.stringify({ all: { hosts: { localhost: { ...LOCALHOST_VARS } } } }));
  ansibleMissing = ansibleProblem(scratch);
});

afterAll(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

async function syntaxCheck(...files: string[]) {
  // Fail (not skip) every check that needs Ansible when it is missing: CI must install it.
  if (ansibleMissing !== undefined) throw new Error(ansibleMissing);
  return execFileAsync('ansible-playbook', ['--syntax-check', '-i', inventory, ...files], {
    cwd: scratch,
    env: { ...process.env, ANSIBLE_NOCOLOR: '1', ANSIBLE_LOCAL_TEMP: join(scratch, 'ansible-tmp') },
  });
}

describe('example playbooks', () => {
  let allChecked: string | undefined;

  it("has ansible-playbook with the collections the examples use (Debian's ansible package)", () => {
    expect(ansibleMissing).toBeUndefined();
  });

  beforeAll(async () => {
    allChecked = await syntaxCheck(...playbooks.map((p) => join(EXAMPLES, p))).then(
      ({ stdout }) => stdout,
      () => undefined,
    );
  });

  it('cover every family the seeds name', () => {
    const families = new Set(samples.map((s) => s.split('/')[0]));

    for (const family of ['k8s', 'database', 'portainer', 'k3s', 'scripts', 'hello']) {
      expect(families, family).toContain(family);
    }
    expect(samples).toEqual(expect.arrayContaining(['scripts/disk-report.sh', 'scripts/windows-report.ps1']));
  });

  it.each(playbooks)('%s passes ansible-playbook --syntax-check', async (path) => {
    // One ansible-playbook checks them all (one Python start-up); a file is checked on its own
    // only when that run failed, so the failure names its file.
    const stdout = allChecked?.includes(`playbook: ${join(EXAMPLES, path)}`)
      ? allChecked
      : (await syntaxCheck(join(EXAMPLES, path))).stdout;

    expect(stdout).toContain(`playbook: ${join(EXAMPLES, path)}`);
  });

  it('the syntax check fails on a module that does not exist (it is not vacuous)', async () => {
    const broken = join(scratch, 'broken.yml');
    writeFileSync(
      broken,
      '- hosts: localhost\n  gather_facts: false\n  tasks:\n    - kubernetes.core.no_such_module: {}\n',
    );

    const failure = await syntaxCheck(broken).then(
      () => undefined,
      (error: { stderr?: string }) => error,
    );

    expect(failure?.stderr).toMatch(/couldn't resolve module\/action 'kubernetes\.core\.no_such_module'/);
  });
});

describe('example headers', () => {
  it.each(samples)('%s names its run kind and variables first', (path) => {
    const header = headerOf(path);

    expect(header, 'first lines: "# Run kind: <kind>" then "# Variables: …"').toBeDefined();
    expect(RUN_KINDS).toContain(header?.kind);
    expect(expectedKind(path)).toContain(header?.kind);
    expect(header?.variables.trim().length).toBeGreaterThan(3);
  });

  it.each(playbooks)('%s targets the hosts its run kind gives it', (path) => {
    const kind = headerOf(path)?.kind;
    const [doc] = parseAllDocuments(readFileSync(join(EXAMPLES, path), 'utf8'));
    const plays = doc?.toJS() as { hosts?: string }[];

    for (const play of plays) {
      // Cluster, database and Portainer runs get an inventory holding only localhost.
      if (kind === 'cluster_play' || kind === 'database_play' || kind === 'portainer') {
        expect(play.hosts).toBe('localhost');
      } else {
        expect(play.hosts).toBe('all');
      }
    }
  });

  it('database plays log in with the db_login_* variables the control plane supplies', () => {
    for (const path of playbooks.filter((p) => p.startsWith('database/'))) {
      const text = readFileSync(join(EXAMPLES, path), 'utf8');
      for (const v of ['db_login_host', 'db_login_port', 'db_login_user', 'db_login_password']) {
        expect(headerOf(path)?.variables, `${path} header`).toBeDefined();
        expect(text, `${path} ${v}`).toContain(`{{ ${v}`);
      }
    }
  });

  it('k8s_op assets are manifests or values files, and no package binary is committed', () => {
    const ops = samples.filter((p) => /\.ya?ml$/.test(p) && !isPlaybook(p));
    const binaries = walk(EXAMPLES).filter((p) => /\.(rpm|deb)$/.test(p));
    const packagesReadme = readFileSync(join(EXAMPLES, 'packages/README.md'), 'utf8');

    expect(ops.length).toBeGreaterThan(0);
    for (const path of ops) {
      const docs = parseAllDocuments(readFileSync(join(EXAMPLES, path), 'utf8')).map((d) => d.toJS());
      for (const doc of docs) expect(doc, path).toBeTypeOf('object');
    }
    expect(binaries).toEqual([]);
    expect(packagesReadme).toMatch(/Run kind: `vm`/);
    expect(packagesReadme).toMatch(/Variables: none/);
  });

  it.each(samples.filter((p) => p.endsWith('.sh')))('%s is valid bash', (path) => {
    expect(() => execFileSync('bash', ['-n', join(EXAMPLES, path)])).not.toThrow();
  });
});
