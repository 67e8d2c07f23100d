import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * A small Dockerfile reader for the static checks of the images (no Docker
 * engine runs here). It understands what our Dockerfiles use: comments, parser
 * directives, `\` continuations, global and stage `ARG`s with defaults, `FROM
 * [--platform=…] image [AS name]`, and exec-form (JSON) `ENTRYPOINT`/`CMD`.
 * Heredocs and a changed escape character are not supported (we use neither).
 */

export const REPO = resolve(import.meta.dirname, '../..');

/** The one Dockerfile of the runner images; its build arg RUNNER picks the image. */
export const RUNNER_DOCKERFILE = 'runners/Dockerfile';

/** The runner images (task shim as entrypoint): RUNNER, the directory of their README, the setting that names them. */
export const RUNNER_IMAGES = [
  { runner: 'ansible-winrm', dir: 'runners/ansible-winrm', setting: 'ansible_local_image' },
  { runner: 'ansible-cloud', dir: 'runners/ansible-cloud', setting: 'ansible_cloud_image' },
  { runner: 'helm-kubectl', dir: 'runners/helm-kubectl', setting: 'k8s_runner_image' },
] as const;

export interface Instruction {
  readonly keyword: string;
  /** Everything after the keyword, continuations joined with a space. */
  readonly args: string;
  readonly line: number;
}

export interface Stage {
  readonly image: string;
  readonly platform?: string;
  readonly name?: string;
  readonly instructions: readonly Instruction[];
}

export interface Dockerfile {
  readonly path: string;
  /** `ARG`s before the first `FROM`, with their defaults (usable in `FROM` lines). */
  readonly globalArgs: ReadonlyMap<string, string | undefined>;
  readonly stages: readonly Stage[];
}

export function readInstructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  let pending: string[] = [];
  let start = 0;
  for (const [i, raw] of lines.entries()) {
    const line = raw.replace(/\r$/, '');
    const trimmed = line.trim();
    // Comments (and parser directives) are dropped, also between continued lines, as Docker does.
    if (trimmed.startsWith('#')) continue;
    if (pending.length === 0) {
      if (trimmed === '') continue;
      start = i + 1;
    }
    if (/\\\s*$/.test(line)) {
      pending.push(line.replace(/\\\s*$/, '').trim());
      continue;
    }
    pending.push(trimmed);
    const joined = pending.filter((p) => p !== '').join(' ');
    pending = [];
    const match = /^(\S+)\s*(.*)$/.exec(joined);
    if (match?.[1] !== undefined) {
      out.push({ keyword: match[1].toUpperCase(), args: match[2] ?? '', line: start });
    }
  }
  if (pending.length > 0) throw new Error('the Dockerfile ends inside a continued line');
  return out;
}

/** `NAME=value` / `NAME value` / `NAME` of an ARG or ENV; ENV may set several pairs in one line. */
export function keyValues(instruction: Instruction): { key: string; value: string | undefined }[] {
  const args = instruction.args.trim();
  if (instruction.keyword === 'ENV' && !args.includes('=')) {
    const [key, ...rest] = args.split(/\s+/);
    return [{ key: key ?? '', value: rest.join(' ') }];
  }
  const pairs: { key: string; value: string | undefined }[] = [];
  const re = /([A-Za-z_][A-Za-z0-9_.-]*)(?:=("(?:[^"\\]|\\.)*"|'[^']*'|\S*))?/g;
  for (const m of args.matchAll(re)) {
    const raw = m[2];
    const value =
      raw === undefined
        ? undefined
        : raw.startsWith('"') || raw.startsWith("'")
          ? raw.slice(1, -1).replace(/\\(.)/g, '$1')
          : raw;
    pairs.push({ key: m[1] ?? '', value });
  }
  return pairs;
}

/** `${NAME}` / `$NAME` replaced from `vars`; unknown names are left as they are. */
export function substitute(text: string, vars: ReadonlyMap<string, string | undefined>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (whole, a, b) => {
    const value = vars.get((a ?? b) as string);
    return value ?? whole;
  });
}

/** `buildArgs` stand for `--build-arg NAME=value`: they replace the global ARGs' defaults. */
export function parseDockerfile(path: string, buildArgs: Readonly<Record<string, string>> = {}): Dockerfile {
  const instructions = readInstructions(readFileSync(path, 'utf8'));
  const globalArgs = new Map<string, string | undefined>();
  const stages: { image: string; platform?: string; name?: string; instructions: Instruction[] }[] = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const words = ins.args.split(/\s+/);
      const platform = words.find((w) => w.startsWith('--platform='))?.slice('--platform='.length);
      const rest = words.filter((w) => !w.startsWith('--'));
      const image = substitute(rest[0] ?? '', globalArgs);
      const name = rest[1]?.toUpperCase() === 'AS' ? rest[2] : undefined;
      stages.push({
        image,
        ...(platform === undefined ? {} : { platform }),
        ...(name === undefined ? {} : { name }),
        instructions: [],
      });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined) {
      if (ins.keyword === 'ARG') {
        for (const { key, value } of keyValues(ins)) globalArgs.set(key, buildArgs[key] ?? value);
      }
      continue;
    }
    stage.instructions.push(ins);
  }
  return { path, globalArgs, stages };
}

export const finalStage = (dockerfile: Dockerfile): Stage => {
  const stage = dockerfile.stages.at(-1);
  if (stage === undefined) throw new Error(`${dockerfile.path} has no FROM`);
  return stage;
};

/**
 * The stages the final image is made of, the final one first: each stage and
 * the earlier stage its FROM names, back to the one on an image. What a
 * parent stage sets (LABEL, ENV) is part of the image too.
 */
export function imageStages(dockerfile: Dockerfile): Stage[] {
  const chain = [finalStage(dockerfile)];
  for (;;) {
    const from = chain.at(-1)?.image;
    const parent = dockerfile.stages.find((s) => s.name !== undefined && s.name === from);
    if (parent === undefined || chain.includes(parent)) return chain;
    chain.push(parent);
  }
}

export const instructionsOf = (stage: Stage, keyword: string): Instruction[] =>
  stage.instructions.filter((i) => i.keyword === keyword);

/** An exec-form instruction's argv (`ENTRYPOINT ["node", "x"]`); undefined for shell form. */
export function execForm(instruction: Instruction | undefined): string[] | undefined {
  if (instruction === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(instruction.args);
    return Array.isArray(parsed) && parsed.every((p) => typeof p === 'string') ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The argv of the esbuild command that bundles `entry` in a Dockerfile: the
 * words after `esbuild` on the one `RUN` that bundles it.
 */
export function bundleArgs(dockerfile: Dockerfile, entry: string): string[] {
  const runs = dockerfile.stages.flatMap((s) => instructionsOf(s, 'RUN'));
  const bundling = runs.filter((r) =>
    r.args.split(/\s+/).some((w, i, all) => w === entry && all[i - 1] === 'esbuild'),
  );
  if (bundling.length !== 1) {
    throw new Error(`${dockerfile.path}: expected one RUN that bundles ${entry}, found ${bundling.length}`);
  }
  const words = (bundling[0]?.args ?? '').split(/\s+/);
  return words.slice(words.indexOf('esbuild') + 1);
}

export const dockerfileOf = (dir: string): Dockerfile => parseDockerfile(join(REPO, dir, 'Dockerfile'));

/** runners/Dockerfile as `--build-arg RUNNER=<runner>` builds it. */
export const runnerDockerfile = (runner: string): Dockerfile =>
  parseDockerfile(join(REPO, RUNNER_DOCKERFILE), { RUNNER: runner });
