import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readdirSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import type { ConfigFile, Prerequisite } from './sets.ts';

/**
 * Whether each prerequisite is on this machine, as cheaply as that can be
 * told, since `npm start` asks every time: PATH and file look-ups in this
 * process, and one Python per interpreter asking importlib's find_spec (no
 * module is imported, no package manager is queried).
 *
 * @example
 * const missing = (await probe(START)).filter((r) => r.missing.length > 0);
 */

export interface ProbeResult {
  readonly prerequisite: Prerequisite;
  /** What is absent, as an operator reads it (`ansible-playbook not on PATH`); empty when all is there. */
  readonly missing: readonly string[];
}

export function onPath(command: string, path = process.env.PATH ?? ''): string | undefined {
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, command);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

/** `/usr/lib/postgresql/* /bin/initdb`: one `*` segment, matched against the directory's entries. */
function globExists(pattern: string): boolean {
  const star = pattern.indexOf('*');
  if (star < 0) return existsSync(pattern);
  const parent = dirname(pattern.slice(0, star + 1));
  const rest = pattern.slice(star + 1);
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return false;
  }
  return names.some((name) => existsSync(join(parent, `${name}${rest}`)));
}

/**
 * The interpreter of ansible-playbook's `#!` line: the Python whose site
 * packages hold the collections (Debian's ansible runs /usr/bin/python3,
 * whatever python3 is first on PATH).
 */
function ansiblePython(path: string | undefined): string | undefined {
  const playbook = onPath('ansible-playbook', path);
  if (playbook === undefined) return undefined;
  const first = readFileSync(playbook, 'utf8').slice(0, 200).split('\n')[0] ?? '';
  const words = first
    .replace(/^#!\s*/, '')
    .trim()
    .split(/\s+/);
  // `#!/usr/bin/env python3` names the interpreter in its second word.
  return (words[0]?.endsWith('/env') ? words[1] : words[0]) || undefined;
}

/**
 * Asks `interpreter` which of `modules` it cannot find. Collection paths
 * (ANSIBLE_COLLECTIONS_PATH, ~/.ansible/collections,
 * /usr/share/ansible/collections) go first on sys.path so collections
 * installed with ansible-galaxy count as well as packaged ones.
 */
const FIND_MISSING = [
  'import importlib.util, os, sys',
  "extra = os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(os.pathsep)",
  "sys.path[:0] = [p for p in extra if p] + [os.path.expanduser('~/.ansible/collections'), '/usr/share/ansible/collections']",
  'def found(name):',
  '    try:',
  '        return importlib.util.find_spec(name) is not None',
  '    except (ImportError, ValueError):',
  '        return False',
  "print('\\n'.join(m for m in sys.argv[1:] if not found(m)))",
].join('\n');

function missingModules(interpreter: string, modules: readonly string[], env: NodeJS.ProcessEnv) {
  return new Promise<Set<string>>((resolve) => {
    execFile(interpreter, ['-c', FIND_MISSING, ...modules], { env, timeout: 20_000 }, (error, stdout) => {
      // An interpreter that does not start has none of them.
      resolve(new Set(error === null ? stdout.split('\n').filter(Boolean) : modules));
    });
  });
}

export async function probe(
  prerequisites: readonly Prerequisite[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<ProbeResult[]> {
  const path = env.PATH;
  const ansible = ansiblePython(path);
  // Every module per interpreter, so each interpreter starts once.
  const wanted = new Map<string, Set<string>>();
  const want = (interpreter: string, module: string) => {
    const resolved = interpreter.includes('/') ? interpreter : onPath(interpreter, path);
    if (resolved === undefined) return;
    wanted.set(resolved, (wanted.get(resolved) ?? new Set()).add(module));
  };
  for (const p of prerequisites) {
    for (const m of p.python?.modules ?? []) want(p.python?.interpreter ?? 'python3', m);
    if (ansible !== undefined) for (const c of p.collections ?? []) want(ansible, `ansible_collections.${c}`);
  }
  const absent = new Map<string, Set<string>>();
  await Promise.all(
    [...wanted].map(async ([interpreter, modules]) =>
      absent.set(interpreter, await missingModules(interpreter, [...modules], env)),
    ),
  );
  const lacks = (interpreter: string, module: string): boolean => {
    const resolved = interpreter.includes('/') ? interpreter : onPath(interpreter, path);
    return resolved === undefined || !existsSync(resolved) || (absent.get(resolved)?.has(module) ?? true);
  };

  return prerequisites.map((prerequisite) => {
    const missing: string[] = [];
    for (const command of prerequisite.commands ?? []) {
      if (onPath(command, path) === undefined) missing.push(`${command} not on PATH`);
    }
    for (const file of prerequisite.files ?? []) {
      if (!globExists(file)) missing.push(`no ${file}`);
    }
    const python = prerequisite.python;
    for (const module of python?.modules ?? []) {
      if (lacks(python?.interpreter ?? 'python3', module)) {
        missing.push(`${python?.interpreter} cannot import ${module}`);
      }
    }
    for (const collection of prerequisite.collections ?? []) {
      // Without ansible-playbook, "not on PATH" above says it all.
      if (ansible !== undefined && lacks(ansible, `ansible_collections.${collection}`)) {
        missing.push(`collection ${collection} not installed for ${ansible}`);
      }
    }
    return { prerequisite, missing };
  });
}

export type ConfigState = 'ok' | 'absent' | 'different';

/** `different`: someone else's file that lacks a setting we need; it is reported, never overwritten. */
export function configState(config: ConfigFile): ConfigState {
  let text: string;
  try {
    text = readFileSync(config.path, 'utf8');
  } catch {
    return 'absent';
  }
  return config.required.every((re) => re.test(text)) ? 'ok' : 'different';
}
