import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { shellQuote, type WrappedAssetType, wrapperPlaybook } from '../../../shared/domain/wrappers.ts';

interface Task {
  readonly name?: string;
  readonly become?: boolean;
  readonly block?: readonly Task[];
  readonly always?: readonly Task[];
  readonly [module: string]: unknown;
}
interface Play {
  readonly hosts: string;
  readonly gather_facts: boolean;
  readonly tasks: readonly Task[];
  readonly vars?: unknown;
}

/** Ansible's `!unsafe` tag, kept visible so tests can see which scalars are protected from templating. */
class Unsafe {
  constructor(readonly value: string) {}
}
const unsafeTag = {
  tag: '!unsafe',
  resolve: (value: string) => new Unsafe(value),
};

function parsePlay(text: string): Play {
  const doc = parse(text, { customTags: [unsafeTag] }) as unknown;
  expect(Array.isArray(doc)).toBe(true);
  const plays = doc as Play[];
  expect(plays).toHaveLength(1);
  return plays[0]!;
}

/** Undo POSIX single quoting the way Python's shlex.split does for one quoted word. */
function shellUnquote(word: string): string {
  let out = '';
  let i = 0;
  while (i < word.length) {
    if (word[i] === "'") {
      const end = word.indexOf("'", i + 1);
      out += word.slice(i + 1, end);
      i = end + 1;
    } else if (word[i] === '\\') {
      out += word[i + 1];
      i += 2;
    } else {
      out += word[i];
      i++;
    }
  }
  return out;
}

const allTasks = (play: Play): Task[] =>
  play.tasks.flatMap((t) => [t, ...(t.block ?? []), ...(t.always ?? [])]);
const moduleTask = (play: Play, module: string): Task | undefined => allTasks(play).find((t) => module in t);

const awkwardPaths = [
  '/ansible/assets/plain.sh',
  '/srv/assets/with space/it\'s "quoted".sh',
  "/srv/{{ lookup('pipe', 'id') }}/x.sh",
  '/srv/new\nline: yes #.sh',
  '/srv/ünïcødé/$HOME/`id`.sh',
];

describe('wrapperPlaybook', () => {
  it.each(awkwardPaths)('runs a .sh asset with ansible.builtin.script and /bin/bash: %j', (path) => {
    const play = parsePlay(wrapperPlaybook('script', path));

    const task = moduleTask(play, 'ansible.builtin.script');
    const args = task?.['ansible.builtin.script'] as { cmd: Unsafe; executable: string };
    expect(play.hosts).toBe('all');
    expect(play.gather_facts).toBe(false);
    expect(args.executable).toBe('/bin/bash');
    expect(args.cmd).toBeInstanceOf(Unsafe);
    expect(args.cmd.value).toBe(shellQuote(path));
    expect(shellUnquote(args.cmd.value)).toBe(path);
  });

  it('runs a .ps1 asset with ansible.builtin.script and no POSIX executable', () => {
    const play = parsePlay(wrapperPlaybook('powershell', 'C:/assets/setup.ps1'));

    const args = moduleTask(play, 'ansible.builtin.script')?.['ansible.builtin.script'] as Record<
      string,
      unknown
    >;
    expect(shellUnquote((args.cmd as Unsafe).value)).toBe('C:/assets/setup.ps1');
    expect(args).not.toHaveProperty('executable');
  });

  it.each(awkwardPaths)('copies an .rpm and installs it with yum, GPG checks on: %j', (path) => {
    const play = parsePlay(wrapperPlaybook('rpm', path));

    const copy = moduleTask(play, 'ansible.builtin.copy')?.['ansible.builtin.copy'] as Record<
      string,
      unknown
    >;
    const install = moduleTask(play, 'ansible.builtin.yum')?.['ansible.builtin.yum'] as Record<
      string,
      unknown
    >;
    expect((copy.src as Unsafe).value).toBe(path);
    expect(copy.dest).toBe('{{ rw_pkg_dir.path }}/package.rpm');
    expect(install).toEqual({ name: '{{ rw_pkg_dir.path }}/package.rpm', state: 'present' });
  });

  it('disables the RPM GPG check only when asked', () => {
    const play = parsePlay(wrapperPlaybook('rpm', '/a/b.rpm', { disableGpgCheck: true }));

    const install = moduleTask(play, 'ansible.builtin.yum')?.['ansible.builtin.yum'] as Record<
      string,
      unknown
    >;
    expect(install.disable_gpg_check).toBe(true);
  });

  it('copies a .deb and installs it with apt deb:, removing the remote copy always', () => {
    const play = parsePlay(wrapperPlaybook('deb', '/a/tool_1.0_amd64.deb'));

    const block = play.tasks[0]!;
    const install = moduleTask(play, 'ansible.builtin.apt')?.['ansible.builtin.apt'] as Record<
      string,
      unknown
    >;
    const cleanup = block.always?.[0]?.['ansible.builtin.file'] as Record<string, unknown>;
    expect(block.become).toBe(true);
    expect(install).toEqual({ deb: '{{ rw_pkg_dir.path }}/package.deb' });
    expect(cleanup).toEqual({ path: '{{ rw_pkg_dir.path }}', state: 'absent' });
  });

  it.each(['script', 'powershell', 'rpm', 'deb'] satisfies WrappedAssetType[])(
    'references no play variable of the caller (%s)',
    (type) => {
      const text = wrapperPlaybook(type, '/a/x');

      const templates = [...text.matchAll(/\{\{(.*?)\}\}/g)].map((m) => m[1]?.trim());
      const play = parsePlay(text);
      expect(play.vars).toBeUndefined();
      for (const expression of templates) expect(expression).toMatch(/^rw_(pkg_dir|script)\b/);
    },
  );
});
