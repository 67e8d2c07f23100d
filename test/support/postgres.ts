import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.ts';

/**
 * A throwaway PostgreSQL server for tests: the distribution's own binaries
 * (Debian's `postgresql` package), a fresh cluster in a temp dir, TCP on
 * 127.0.0.1 only, and SCRAM password authentication for every TCP login — so
 * a wrong password really fails, as it would against a production database.
 *
 * - Runs as the `postgres` OS user (`runuser`): the server refuses to run as
 *   root, and the tests run as root.
 * - The bootstrap superuser `postgres` can log in only over the cluster's own
 *   Unix socket (trust); `query()` uses that path. The "managed admin"
 *   (`dbadmin`, CREATEROLE + CREATEDB, not superuser) logs in over TCP with
 *   the password the test's Password Safe hands out.
 * - No SQL ever travels on a command line (psql reads it from stdin), so no
 *   password is visible in `/proc/<pid>/cmdline`.
 * - Durability is off (fsync, synchronous_commit, full_page_writes): the
 *   cluster lives for one test file.
 * - A watchdog (`cat` on a pipe from this process, then `pg_ctl stop` and
 *   `rm -rf`) stops the server and removes its files when this process ends
 *   without calling `stop()` — a killed test worker leaves nothing running.
 *
 * @example
 * const pg = await startPostgres({ adminPassword: 'from-password-safe' });
 * try {
 *   await pg.query("CREATE ROLE app LOGIN PASSWORD 'x'");
 *   await pg.query("SELECT rolname FROM pg_roles WHERE rolname = 'app'"); // 'app'
 * } finally {
 *   await pg.stop();
 * }
 */
export interface TestPostgres {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** The managed admin role (login over TCP with `adminPassword`). */
  readonly adminUser: string;
  /** Server major version, e.g. 15. */
  readonly version: number;
  /**
   * Run SQL as the bootstrap superuser (over the Unix socket, SQL on stdin).
   * Answers the rows, tuples only, unaligned, fields joined by `|`, trimmed.
   */
  query(sql: string): Promise<string>;
  /**
   * Run SQL as `user` over TCP with SCRAM (the password in the environment,
   * never on the command line); rejects when the login fails.
   */
  queryAs(user: string, password: string, sql: string): Promise<string>;
  /** Stop the server (immediate) and remove every file. Idempotent. */
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** Password of the managed admin role. */
  readonly adminPassword: string;
  /** Name of the managed admin role; default `dbadmin`. */
  readonly adminUser?: string;
}

const execFileAsync = promisify(execFile);

const INSTALL_HINT =
  '.ci/run must install the Debian packages postgresql (server binaries under /usr/lib/postgresql/<major>/bin ' +
  'and the postgres OS user) and python3-psycopg2 (for community.postgresql): ' +
  'DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql python3-psycopg2';

const OS_USER = 'postgres';
const START_ATTEMPTS = 3;

/** Quote a value as an SQL string literal (standard_conforming_strings is on by default since 9.1). */
export function sqlLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** Quote an identifier (role names in DDL). */
export function sqlIdentifier(value: string): string {
  return `"${value.replaceAll('"', '""')}"`;
}

/** The newest server installation under /usr/lib/postgresql (Debian's layout). */
function findServerBin(): { bin: string; version: number } {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, 'bin', 'initdb')))
        .map(Number)
        .sort((a, b) => b - a)
    : [];
  const version = versions[0];
  if (version === undefined) {
    throw new Error(`PostgreSQL server binaries not found under ${root}/<major>/bin: ${INSTALL_HINT}`);
  }
  return { bin: join(root, String(version), 'bin'), version };
}

async function osUser(name: string): Promise<{ uid: number; gid: number }> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', name]).then(({ stdout }) => Number(stdout.trim())),
      execFileAsync('id', ['-g', name]).then(({ stdout }) => Number(stdout.trim())),
    ]);
    return { uid, gid };
  } catch {
    throw new Error(`the ${name} OS user does not exist: ${INSTALL_HINT}`);
  }
}

/** Run a server binary as the postgres OS user. */
function asPostgres(bin: string, tool: string, args: readonly string[], timeoutMs = 30_000) {
  return execFileAsync('runuser', ['-u', OS_USER, '--', join(bin, tool), ...args], {
    timeout: timeoutMs,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C', LC_ALL: 'C' },
  });
}

const errorText = (error: unknown): string => {
  const e = error as { stderr?: string; stdout?: string; message?: string };
  return (e.stderr || e.stdout || e.message || String(error)).trim();
};

/**
 * Initialise a cluster and start it on a free loopback port; resolves once it
 * accepts connections (usually 1–3 s, mostly initdb).
 */
export async function startPostgres(options: StartPostgresOptions): Promise<TestPostgres> {
  const { bin, version } = findServerBin();
  const owner = await osUser(OS_USER);
  const adminUser = options.adminUser ?? 'dbadmin';

  // /tmp (or TMPDIR) must be traversable by the postgres user; the dir itself is handed to it.
  const root = mkdtempSync(join(tmpdir(), 'rw-pg-'));
  const data = join(root, 'data');
  const logFile = join(root, 'server.log');
  let watchdog: ChildProcess | undefined;
  let stopped = false;

  const removeAll = (): void => rmSync(root, { recursive: true, force: true });

  try {
    chownSync(root, owner.uid, owner.gid);
    try {
      await asPostgres(bin, 'initdb', [
        '-D',
        data,
        '-U',
        'postgres',
        '-A',
        'trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ]);
    } catch (error) {
      throw new Error(`initdb failed: ${errorText(error)}`);
    }

    // Root appends; the files stay owned by postgres.
    appendFileSync(
      join(data, 'postgresql.conf'),
      [
        '',
        '# remote-worker test cluster',
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${root}'`,
        "password_encryption = 'scram-sha-256'",
        'fsync = off',
        'synchronous_commit = off',
        'full_page_writes = off',
        'max_connections = 20',
        'shared_buffers = 16MB',
        '',
      ].join('\n'),
    );
    // Only the bootstrap superuser on the private socket is trusted; every TCP login needs its SCRAM password.
    await writeFile(
      join(data, 'pg_hba.conf'),
      ['local all postgres trust', 'host all all 127.0.0.1/32 scram-sha-256', ''].join('\n'),
    );

    let port = 0;
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await asPostgres(bin, 'pg_ctl', [
          '-D',
          data,
          '-l',
          logFile,
          '-o',
          `-p ${port}`,
          '-w',
          '-t',
          '30',
          'start',
        ]);
        break;
      } catch (error) {
        const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
        // Another process took the port between our probe and the server's bind: try another.
        if (attempt < START_ATTEMPTS && /could not bind|Address already in use/i.test(log)) continue;
        throw new Error(`PostgreSQL did not start: ${errorText(error)}\n${log.slice(-2000)}`);
      }
    }

    // Stops the server and removes the cluster when our end of the pipe closes — also when we die.
    watchdog = spawn(
      'runuser',
      [
        '-u',
        OS_USER,
        '--',
        'sh',
        '-c',
        'cat >/dev/null; "$1/pg_ctl" -D "$2" -m immediate -w stop >/dev/null 2>&1; rm -rf "$3"',
        'pg-watchdog',
        bin,
        data,
        root,
      ],
      { stdio: ['pipe', 'ignore', 'ignore'], detached: true },
    );
    watchdog.unref();
    (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();

    const psql = async (host: string, user: string, sql: string, password?: string): Promise<string> => {
      const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', PGDATABASE: 'postgres' };
      if (password !== undefined) env.PGPASSWORD = password;
      try {
        const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) => {
          const child = execFile(
            join(bin, 'psql'),
            [
              '-X',
              '-q',
              '-A',
              '-t',
              '-w',
              '-v',
              'ON_ERROR_STOP=1',
              '-h',
              host,
              '-p',
              String(port),
              '-U',
              user,
            ],
            { env, timeout: 20_000 },
            (error, out, err) =>
              error ? reject(Object.assign(error, { stderr: err })) : resolve({ stdout: out }),
          );
          child.stdin?.end(sql);
        });
        return stdout.trim();
      } catch (error) {
        const text = errorText(error);
        throw new Error(
          `psql as ${user} failed: ${password === undefined ? text : text.replaceAll(password, '********')}`,
        );
      }
    };
    const query = (sql: string): Promise<string> => psql(root, 'postgres', sql);
    const queryAs = (user: string, password: string, sql: string): Promise<string> =>
      psql('127.0.0.1', user, sql, password);

    const stop = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      const dog = watchdog;
      if (dog !== undefined && dog.exitCode === null && dog.signalCode === null) {
        const exited = new Promise<void>((resolve) => dog.once('exit', () => resolve()));
        dog.ref(); // keep this process alive until the server is down
        dog.stdin?.end();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
        clearTimeout(timer);
      }
      // The watchdog normally stopped the server already; this covers a watchdog that died early.
      await asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'], 10_000).catch(() => {});
      removeAll();
    };

    try {
      await query(
        `CREATE ROLE ${sqlIdentifier(adminUser)} LOGIN CREATEROLE CREATEDB PASSWORD ${sqlLiteral(options.adminPassword)};`,
      );
    } catch (error) {
      // psql may quote the statement back; the password must not ride along.
      const text = String((error as Error).message).replaceAll(options.adminPassword, '********');
      throw new Error(`creating the managed admin role ${adminUser} failed: ${text}`);
    }

    return { host: '127.0.0.1', port, adminUser, version, query, queryAs, stop };
  } catch (error) {
    watchdog?.stdin?.end();
    await asPostgres(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop'], 10_000).catch(() => {});
    removeAll();
    throw error;
  }
}
