import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PasswordSafeBroker } from '../../shared/adapters/password-safe/broker.ts';
import { ProcessExecutor } from '../../shared/adapters/relay/process-executor.ts';
import { checkoutMinutes } from '../../shared/domain/checkout.ts';
import { inventoryForRun } from '../../shared/domain/inventory.ts';
import { type DatabaseTarget, DatabaseTargetSchema } from '../../shared/domain/target.ts';
import type { TaskSpec } from '../../shared/domain/task.ts';
import type { ExecutionResult } from '../../shared/ports/executor.ts';
import type { LogLineInput } from '../../shared/ports/log-store.ts';
import { withCheckedOutAccount } from '../support/checkout.ts';
import {
  type FakeAccount,
  type FakePasswordSafe,
  startFakePasswordSafe,
} from '../support/fake-password-safe.ts';
import { startPostgres, type TestPostgres } from '../support/postgres.ts';

/*
 * The "must show" for registered databases, end to end on this host:
 * a database target registered against a Password Safe managed account; its
 * admin login checked out just in time; a real `ansible-playbook` (Debian's,
 * /usr/bin, with community.postgresql) run by the real task shim under the
 * relay's process executor — the path an on-prem (`cloud = local`) database
 * run takes — creating a role in a real PostgreSQL 15 that demands SCRAM
 * passwords over TCP; and the account checked in again however the play ends.
 *
 * The password travels as the system sends it: as the task's secret
 * environment (`RW_SECRET_0`), which the shim turns into the play variable
 * `db_login_password` through a 0600 extra-vars file it removes afterwards,
 * and whose value it redacts (createRedactor, shared/domain/redaction.ts)
 * from every output line before the line leaves the task.
 *
 * What is not real: Password Safe is the loopback fake (its differences are
 * listed in test/integration/password-safe.test.ts), and the dispatcher's own
 * wiring (target → checkout → prepareTask → launcher) is `runDatabasePlay`
 * below, a stand-in for code that does not exist yet.
 */

const REPO = resolve(import.meta.dirname, '../..');
const ROLE_PLAYBOOK = join(REPO, 'examples/playbooks/database/postgresql-role.yml');
const ANSIBLE_PLAYBOOK = '/usr/bin/ansible-playbook';
const INSTALL_HINT =
  ".ci/run must install Debian's ansible (community.postgresql), postgresql and python3-psycopg2: " +
  'DEBIAN_FRONTEND=noninteractive apt-get install -y ansible postgresql python3-psycopg2';

/** The managed admin's password: Password Safe hands it out, PostgreSQL checks it. */
const ADMIN_PASSWORD = `Adm-${randomBytes(12).toString('base64url')}`;
const API_KEY = `api-key-${randomUUID()}`;

let ps: FakePasswordSafe;
let pg: TestPostgres;
let account: FakeAccount;
let broker: PasswordSafeBroker;
let scratch: string;
let playbook: string;
let target: DatabaseTarget;
const executor = new ProcessExecutor({ executorId: `db-play-${randomUUID()}`, pollMs: 50 });

beforeAll(async () => {
  if (!existsSync(ANSIBLE_PLAYBOOK)) throw new Error(`${ANSIBLE_PLAYBOOK} is missing: ${INSTALL_HINT}`);
  scratch = mkdtempSync(join(tmpdir(), 'rw-db-play-'));
  [ps, pg] = await Promise.all([
    startFakePasswordSafe({ apiKey: API_KEY, runAs: 'svc-remote-worker' }),
    startPostgres({ adminPassword: ADMIN_PASSWORD }),
  ]);
  account = ps.addAccount({
    systemName: 'pg-onprem-01',
    accountName: pg.adminUser,
    password: ADMIN_PASSWORD,
  });
  broker = new PasswordSafeBroker({ baseUrl: ps.baseUrl, apiKey: API_KEY, runAs: 'svc-remote-worker' });

  target = {
    id: 'db-onprem-01',
    createdAt: '2026-11-29T00:00:00Z',
    updatedAt: '2026-11-29T00:00:00Z',
    ...DatabaseTargetSchema.parse({
      kind: 'database',
      cloud: 'local',
      name: 'On-prem PostgreSQL',
      engine: 'postgresql',
      endpoint: { host: pg.host, port: pg.port },
      source: 'registered',
      managedAccount: `pg-onprem-01/${pg.adminUser}`,
    }),
  };

  // The shipped example, preceded by a play that prints the login it was given, as a careless playbook might.
  playbook = join(scratch, 'role-with-debug.yml');
  writeFileSync(
    playbook,
    [
      '- name: Show the login the control plane supplied',
      '  hosts: localhost',
      '  gather_facts: false',
      '  tasks:',
      '    - name: Login variables',
      '      ansible.builtin.debug:',
      '        msg:',
      '          host: "{{ db_login_host }}"',
      '          port: "{{ db_login_port }}"',
      '          user: "{{ db_login_user }}"',
      '          password: "{{ db_login_password }}"',
      `- import_playbook: ${ROLE_PLAYBOOK}`,
      '',
    ].join('\n'),
  );
}, 60_000);

afterAll(async () => {
  await Promise.all([pg?.stop(), ps?.close()]);
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

afterEach(() => {
  account.password = ADMIN_PASSWORD;
});

interface PlayRun {
  readonly result: ExecutionResult;
  /** Every line the task wrote, as the relay would ship it. */
  readonly output: string;
  readonly workDir: string;
  /** Command lines of every process seen while the play ran that held the password. */
  readonly passwordOnCommandLine: string[];
}

class PlayFailedError extends Error {
  constructor(readonly run: PlayRun) {
    super(`the play failed: ${JSON.stringify(run.result)}`);
  }
}

/** Every process's argv that contains `needle`, sampled until `done` settles. */
async function watchCommandLines(needle: string, done: Promise<unknown>): Promise<string[]> {
  const seen = new Set<string>();
  let finished = false;
  void done.finally(() => {
    finished = true;
  });
  while (!finished) {
    for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (argv.includes(needle)) seen.add(argv.replaceAll('\0', ' '));
      } catch {
        // Gone while we looked.
      }
    }
    await new Promise((r) => setTimeout(r, 40));
  }
  return [...seen];
}

/**
 * What the dispatcher does for a database_play on a registered database:
 * check the managed account out, give the task `db_login_*` (the password as
 * secret env), run it, and check the account in however it ends.
 */
async function runDatabasePlay(
  db: DatabaseTarget,
  extraVars: Record<string, unknown>,
  secrets: Record<string, string>,
): Promise<PlayRun> {
  const runId = `run-${randomUUID()}`;
  const timeoutSeconds = 120;
  return withCheckedOutAccount(
    broker,
    {
      account: db.managedAccount ?? '',
      reason: `Remote Worker ${runId}`,
      durationMinutes: checkoutMinutes(60, timeoutSeconds),
    },
    async (lease) => {
      const secretNames = ['db_login_password', ...Object.keys(secrets)];
      const secretValues = [lease.password, ...Object.values(secrets)];
      const spec: TaskSpec = {
        runId,
        kind: 'database_play',
        asset: { kind: 'file', path: playbook },
        assetType: 'playbook',
        inventory: inventoryForRun('database_play', db),
        extraVars: {
          ...extraVars,
          db_login_host: db.endpoint.host,
          db_login_port: db.endpoint.port ?? 5432,
          db_login_user: lease.username,
        },
        secretVars: secretNames.map((name, i) => ({ var: name, env: `RW_SECRET_${i}` })),
        timeoutSeconds,
      };
      const workDir = mkdtempSync(join(scratch, 'run-'));
      const lines: LogLineInput[] = [];
      const exec = await executor.start(
        {
          runId,
          image: '',
          spec,
          secretEnv: Object.fromEntries(secretValues.map((value, i) => [`RW_SECRET_${i}`, value])),
          // Debian's ansible-playbook first: its /usr/bin/python3 has psycopg2.
          env: { PATH: `/usr/bin:/bin:${process.env.PATH ?? ''}` },
          workDir,
        },
        (batch) => {
          lines.push(...batch);
        },
      );
      const [result, passwordOnCommandLine] = await Promise.all([
        exec.done,
        watchCommandLines(lease.password, exec.done),
      ]);
      const run = { result, output: lines.map((l) => l.text).join('\n'), workDir, passwordOnCommandLine };
      if (result.exitCode !== 0) throw new PlayFailedError(run);
      return run;
    },
  );
}

async function playFailure(promise: Promise<PlayRun>): Promise<PlayRun> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof PlayFailedError)) throw new Error(`expected the play to fail, got ${String(error)}`);
  return error.run;
}

const roleName = () => `rw_app_${randomBytes(4).toString('hex')}`;
const rolePassword = () => `Role-${randomBytes(12).toString('base64url')}`;

/** The shim's work dir is gone (it held the 0600 extra-vars file); nothing left behind holds `secret`. */
function expectNothingLeftWith(run: PlayRun, secret: string): void {
  const left = readdirSync(run.workDir);
  expect(left.filter((n) => n.startsWith('rw-task-'))).toEqual([]);
  for (const name of left) expect(readFileSync(join(run.workDir, name), 'utf8'), name).not.toContain(secret);
}

describe('database play on a registered database with a Password Safe account', () => {
  it('creates the role with the checked-out login, masks the password and checks the account in', async () => {
    const role = roleName();
    const password = rolePassword();
    const requestsBefore = ps.requests.length;

    const run = await runDatabasePlay(target, { role_name: role }, { role_password: password });

    // The role is there, and the play set its password: it can log in over SCRAM.
    expect(await pg.query(`SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = '${role}'`)).toBe(
      `${role}|t`,
    );
    expect(await pg.queryAs(role, password, 'SELECT current_user')).toBe(role);
    // Exactly one checkout, for this account, now checked in.
    expect(ps.requests.slice(requestsBefore)).toEqual([
      expect.objectContaining({ accountId: account.accountId, status: 'checked_in', credentialReads: 1 }),
    ]);
    expect(ps.openRequests()).toEqual([]);
    expect(ps.openSessions()).toBe(0);
    // The debug task printed the login; the password came out masked, the rest as it was.
    expect(run.output).toContain(`"user": "${pg.adminUser}"`);
    expect(run.output).toContain(`"port": ${pg.port},`);
    expect(run.output).toContain('"password": "********"');
    expect(run.output).toMatch(/TASK \[Role exists\][\s\S]*changed: \[localhost\]/);
    expect(run.output).not.toContain(ADMIN_PASSWORD);
    expect(run.output).not.toContain(password);
    expect(run.passwordOnCommandLine).toEqual([]);
    expect(run.output).toMatch(/running ansible-playbook -i \S+ -e @\S+extra-vars\.json /);
    expectNothingLeftWith(run, ADMIN_PASSWORD);
  });

  it('checks the account in when the play fails (a database that does not exist)', async () => {
    const role = roleName();

    const run = await playFailure(
      runDatabasePlay(
        target,
        { role_name: role, db_login_db: 'no_such_database' },
        { role_password: rolePassword() },
      ),
    );

    expect(run.result.exitCode).toBe(2);
    expect(run.output).toContain('database \\"no_such_database\\" does not exist');
    expect(await pg.query(`SELECT count(*) FROM pg_roles WHERE rolname = '${role}'`)).toBe('0');
    expect(ps.requests.at(-1)).toMatchObject({ accountId: account.accountId, status: 'checked_in' });
    expect(ps.openRequests()).toEqual([]);
    expect(run.output).toContain('"password": "********"');
    expect(run.output).not.toContain(ADMIN_PASSWORD);
    expectNothingLeftWith(run, ADMIN_PASSWORD);
  });

  it('fails to log in when Password Safe hands out a password the database does not know, and checks in', async () => {
    const stale = `Stale-${randomBytes(12).toString('base64url')}`;
    account.password = stale;
    const role = roleName();

    const run = await playFailure(
      runDatabasePlay(target, { role_name: role }, { role_password: rolePassword() }),
    );

    // SCRAM really checks: the same play with the right password created its role above.
    expect(run.output).toContain(`password authentication failed for user \\"${pg.adminUser}\\"`);
    expect(await pg.query(`SELECT count(*) FROM pg_roles WHERE rolname = '${role}'`)).toBe('0');
    expect(ps.requests.at(-1)).toMatchObject({ status: 'checked_in' });
    expect(ps.openRequests()).toEqual([]);
    expect(run.output).not.toContain(stale);
    expect(run.passwordOnCommandLine).toEqual([]);
    expectNothingLeftWith(run, stale);
  });
});
