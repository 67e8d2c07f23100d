/**
 * Every performance figure of the project in one run: each bench below runs
 * in its own process, one after another (they compete for the same cores
 * otherwise), with BENCH_FIGURES naming a file each appends its figures to;
 * then one table: figure, now, floor (measured in the same run), ratio, goal,
 * and whether the goal is met. Asserts nothing; exits non-zero only when a
 * bench itself fails.
 *
 *   npm run bench:all
 *   npm run bench:all -- --markdown      # the table as Markdown, for a note
 *   npm run bench:all -- lambda-bundles  # only the benches named
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Figure, ratioOf } from './support/figures.ts';

const REPO = resolve(import.meta.dirname, '..');

/** The benches bench:all runs, in this order. */
export const BENCHES = [
  'aws-calls',
  'lambda-bundles',
  'dispatch-latency',
  'local-footprint',
  'relay-latency',
  'launch-budget',
] as const;

type Verdict = 'met' | 'missed' | '?';

/**
 * Whether a figure meets its goal: "≤ 1.3×" / "≥ 0.5" compare the ratio to
 * the floor; a goal with a unit of its own ("≤ 1 s", "≤ 800 ms") compares the
 * figure itself; "= the minimum" asks for the floor exactly.
 */
export function verdictOf(f: Pick<Figure, 'now' | 'floor' | 'goal' | 'unit'>): Verdict {
  const goal = f.goal.trim();
  if (/^=\s*(the\s+)?(minimum|floor)$/i.test(goal)) return f.now <= f.floor ? 'met' : 'missed';
  const m = /^(≤|<=|≥|>=|=)\s*([0-9]+(?:\.[0-9]+)?)\s*(×|x|ms|s|MiB|KiB)?$/.exec(goal);
  if (m === null) return '?';
  const [, op, limitText, unit] = m;
  const limit = Number(limitText);
  let value: number;
  if (unit === 'ms' || unit === 's' || unit === 'MiB' || unit === 'KiB') {
    const scale: Record<string, number> = { ms: 1, s: 1000 };
    const inMs = (n: number, u: string) => n * (scale[u] ?? Number.NaN);
    value = unit === f.unit ? f.now : inMs(f.now, f.unit) / inMs(1, unit);
  } else {
    value = ratioOf(f);
  }
  if (!Number.isFinite(value)) return '?';
  if (op === '≤' || op === '<=') return value <= limit ? 'met' : 'missed';
  if (op === '≥' || op === '>=') return value >= limit ? 'met' : 'missed';
  return value === limit ? 'met' : 'missed';
}

const num = (n: number): string =>
  Number.isFinite(n)
    ? Math.abs(n) >= 100
      ? n.toFixed(0)
      : Math.abs(n) >= 10
        ? n.toFixed(1)
        : n.toFixed(2)
    : '—';

export function tableOf(figures: readonly Figure[], markdown: boolean): string {
  const header = ['figure', 'now', 'floor', 'ratio', 'goal', ''];
  const rows = figures.map((f) => [
    f.figure,
    `${num(f.now)} ${f.unit}`,
    f.floor > 0 ? `${num(f.floor)} ${f.unit}` : '—',
    f.floor > 0 ? `${num(ratioOf(f))}×` : '—',
    f.goal,
    verdictOf(f),
  ]);
  if (markdown) {
    const md = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
    return [md(header), md(header.map(() => '---')), ...rows.map(md)].join('\n');
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(header), ...rows.map(line)].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const markdown = args.includes('--markdown');
  const named = args.filter((a) => !a.startsWith('--'));
  const unknown = named.filter((n) => !(BENCHES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    console.error(`bench:all: no bench named ${unknown.join(', ')}; the benches are ${BENCHES.join(', ')}`);
    process.exit(2);
  }
  const chosen = named.length > 0 ? named : [...BENCHES];
  const dir = mkdtempSync(join(tmpdir(), 'rw-bench-all-'));
  const file = join(dir, 'figures.jsonl');
  const failed: string[] = [];
  const started = performance.now();
  try {
    for (const [i, name] of chosen.entries()) {
      const script = join(REPO, 'bench', `${name}.ts`);
      if (!existsSync(script)) {
        console.error(`bench:all: bench/${name}.ts is missing`);
        failed.push(name);
        continue;
      }
      console.log(`\n== [${i + 1}/${chosen.length}] bench/${name}.ts ==`);
      const t0 = performance.now();
      const result = spawnSync(join(REPO, 'node_modules', '.bin', 'tsx'), [script], {
        cwd: REPO,
        stdio: 'inherit',
        env: { ...process.env, BENCH_FIGURES: file },
      });
      const seconds = ((performance.now() - t0) / 1000).toFixed(0);
      if (result.status !== 0) {
        console.error(
          `bench:all: bench/${name}.ts failed (exit ${result.status ?? result.signal}) after ${seconds} s`,
        );
        failed.push(name);
      } else {
        console.log(`== bench/${name}.ts done in ${seconds} s ==`);
      }
    }
    const figures: Figure[] = existsSync(file)
      ? readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => JSON.parse(l) as Figure)
      : [];
    const total = ((performance.now() - started) / 1000).toFixed(0);
    console.log(
      `\nEvery figure, each against a floor measured in the same run (${process.version}, ${total} s):\n`,
    );
    console.log(tableOf(figures, markdown));
    const missed = figures.filter((f) => verdictOf(f) === 'missed').length;
    console.log(`\n${figures.length} figures: ${figures.length - missed} met or unjudged, ${missed} missed`);
    if (failed.length > 0) {
      console.error(`bench:all: ${failed.length} bench(es) failed: ${failed.join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) await main();
