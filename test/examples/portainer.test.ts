import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LOCALHOST_VARS } from '../../shared/domain/inventory.ts';

/**
 * The Portainer samples (examples/playbooks/portainer/teams.yml and
 * environment-access.yml) run for real with ansible-playbook against a
 * loopback stand-in for the Portainer API, with the connection in
 * PORTAINER_URL / PORTAINER_API_TOKEN as a runner gets it.
 *
 * Where the stand-in differs from Portainer: only the four calls the samples
 * make exist (GET/POST /api/teams, GET/PUT /api/endpoints/{id}); it checks the
 * X-API-Key header against one token and knows no users or roles; ids are
 * small integers; a PUT replaces TeamAccessPolicies and nothing else.
 */

const execFileAsync = promisify(execFile);
const REPO = join(import.meta.dirname, '../..');
const PORTAINER = join(REPO, 'examples/playbooks/portainer');
const TOKEN = 'ptr_test_token_0123456789';

interface Team {
  Id: number;
  Name: string;
}
interface Environment {
  Id: number;
  Name: string;
  TeamAccessPolicies: Record<string, { RoleId: number }>;
}

let server: Server;
let url: string;
let scratch: string;
let inventory: string;
let teams: Team[];
let environments: Map<number, Environment>;
let calls: { method: string; path: string; body?: unknown }[];

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  const body = text === '' ? undefined : (JSON.parse(text) as Record<string, unknown>);
  const path = (req.url ?? '').split('?')[0] ?? '';
  calls.push({ method: req.method ?? '', path, ...(body === undefined ? {} : { body }) });
  if (req.headers['x-api-key'] !== TOKEN) return send(res, 401, { message: 'Unauthorized' });
  if (path === '/api/teams' && req.method === 'GET') return send(res, 200, teams);
  if (path === '/api/teams' && req.method === 'POST') {
    const team = { Id: teams.length + 1, Name: String(body?.Name) };
    teams.push(team);
    return send(res, 200, team);
  }
  const id = Number(/^\/api\/endpoints\/(\d+)$/.exec(path)?.[1]);
  const environment = environments.get(id);
  if (environment === undefined) return send(res, 404, { message: 'Object not found inside the database' });
  if (req.method === 'GET') return send(res, 200, environment);
  if (req.method === 'PUT') {
    environment.TeamAccessPolicies = body?.TeamAccessPolicies as Environment['TeamAccessPolicies'];
    return send(res, 200, environment);
  }
  send(res, 405, { message: 'Method not allowed' });
}

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rw-portainer-'));
  inventory = join(scratch, 'inventory.json');
  writeFileSync(inventory, JSON.stringify({ all: { hosts: { localhost: { ...LOCALHOST_VARS } } } }));
  server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, { message: String(error) }));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((done) => (server === undefined ? done() : server.close(() => done())));
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  teams = [{ Id: 1, Name: 'platform' }];
  environments = new Map([[7, { Id: 7, Name: 'dc1-docker', TeamAccessPolicies: { '9': { RoleId: 4 } } }]]);
  calls = [];
});

async function play(file: string, vars: Record<string, unknown>, env: Record<string, string> = {}) {
  const varsFile = join(scratch, `vars-${Date.now()}.json`);
  writeFileSync(varsFile, JSON.stringify(vars));
  return execFileAsync('ansible-playbook', ['-i', inventory, '-e', `@${varsFile}`, join(PORTAINER, file)], {
    cwd: scratch,
    env: {
      ...process.env,
      ANSIBLE_NOCOLOR: '1',
      ANSIBLE_LOCAL_TEMP: join(scratch, 'ansible-tmp'),
      PORTAINER_URL: `${url}/`,
      PORTAINER_API_TOKEN: TOKEN,
      ...env,
    },
  }).then(
    ({ stdout }) => ({ code: 0, stdout }),
    (error: { code?: number; stdout?: string }) => ({ code: error.code ?? -1, stdout: error.stdout ?? '' }),
  );
}

const recap = (stdout: string) => /localhost\s+: ok=(\d+)\s+changed=(\d+)/.exec(stdout)?.slice(1).map(Number);

describe('examples/playbooks/portainer against a Portainer API stand-in', () => {
  it('teams.yml creates the missing teams, then changes nothing', async () => {
    const first = await play('teams.yml', { teams: ['platform', 'operators', 'auditors'] });
    const second = await play('teams.yml', { teams: ['platform', 'operators', 'auditors'] });

    expect(first.code, first.stdout).toBe(0);
    expect(teams.map((t) => t.Name)).toEqual(['platform', 'operators', 'auditors']);
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.body)).toEqual([
      { Name: 'operators' },
      { Name: 'auditors' },
    ]);
    expect(second.code, second.stdout).toBe(0);
    expect(recap(second.stdout)?.[1]).toBe(0);
  }, 60_000);

  it('environment-access.yml adds team policies, keeps the others, then changes nothing', async () => {
    teams.push({ Id: 2, Name: 'operators' });
    const access = { environment_id: 7, team_access: [{ team: 'operators', role_id: 5 }] };

    const first = await play('environment-access.yml', access);
    const second = await play('environment-access.yml', access);

    expect(first.code, first.stdout).toBe(0);
    expect(environments.get(7)?.TeamAccessPolicies).toEqual({ '9': { RoleId: 4 }, '2': { RoleId: 5 } });
    expect(second.code, second.stdout).toBe(0);
    expect(calls.filter((c) => c.method === 'PUT')).toHaveLength(1);
    expect(recap(second.stdout)?.[1]).toBe(0);
  }, 60_000);

  it('environment-access.yml refuses a team that does not exist, and changes nothing', async () => {
    const result = await play('environment-access.yml', {
      environment_id: 7,
      team_access: [{ team: 'ghosts', role_id: 3 }],
    });

    expect(result.code).not.toBe(0);
    expect(result.stdout).toContain('team ghosts does not exist');
    expect(calls.filter((c) => c.method === 'PUT')).toEqual([]);
  }, 60_000);

  it('says what is missing when the Portainer connection is not configured', async () => {
    const result = await play('teams.yml', {}, { PORTAINER_API_TOKEN: '' });

    expect(result.code).not.toBe(0);
    expect(result.stdout).toContain('PORTAINER_URL and PORTAINER_API_TOKEN are not set');
    expect(calls).toEqual([]);
  }, 60_000);
});
