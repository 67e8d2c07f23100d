import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { reportFigure } from './figures.ts';
import { type Client, FIRST_CALLS } from './lambda-floors.ts';
import type { Bundle, Sample } from './lambda-measure.ts';

/*
 * What bench/lambda-bundles.ts prints: one table row per function beside its
 * floor, then one figure per function (bench/support/figures.ts).
 */

/** A function's bundle, its floor's, the SDK clients the floor holds and whether it makes one failing call. */
export interface Pair {
  readonly fn: Bundle;
  readonly floor: Bundle;
  readonly uses: readonly Client[];
  readonly calls: boolean;
}

/** KiB deployed: the entry file and every chunk beside it. */
const kib = (b: Bundle): number =>
  readdirSync(dirname(b.file), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + statSync(join(e.parentPath, e.name)).size, 0) / 1024;
/** KiB of the entry file alone. */
const entryKib = (b: Bundle): number => statSync(b.file).size / 1024;

/** Prints the table of `pairs` and reports each function's figure, from the medians of `runs` samples. */
export function printFigures(
  pairs: readonly Pair[],
  figures: ReadonlyMap<Bundle, Sample>,
  runs: number,
): void {
  const total = (b: Bundle): number => {
    const m = figures.get(b);
    return m === undefined ? Number.NaN : m.load + m.call;
  };
  console.log(`Lambda bundles (esbuild as in infra/bundling.ts), median of ${runs} fresh node processes`);
  console.log(`node ${process.version} on ${process.platform}/${process.arch}\n`);
  const header = [
    'function',
    'KiB',
    'entry KiB',
    'load ms',
    'load+1st ms',
    'floor KiB',
    'floor ms',
    'ratio',
    'answered',
    'conns',
    'floor holds',
  ];
  const rows = pairs.map(({ fn, floor, uses, calls }) => [
    figures.get(fn)?.handler === false ? `${fn.name} (no handler export)` : fn.name,
    kib(fn).toFixed(1),
    entryKib(fn).toFixed(1),
    (figures.get(fn)?.load ?? Number.NaN).toFixed(1),
    total(fn).toFixed(1),
    kib(floor).toFixed(1),
    total(floor).toFixed(1),
    (total(fn) / total(floor)).toFixed(2),
    figures.get(fn)?.status ?? '',
    `${figures.get(fn)?.connects ?? 0}/${figures.get(floor)?.connects ?? 0}`,
    `${uses.length === 0 ? 'nothing' : uses.join(', ')}${calls ? ` (+1 ${FIRST_CALLS[uses[0] ?? 'dynamodb']?.[0]})` : ''}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 || i >= 8 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
  console.log('');
  console.log("answered: the first call's status; conns: connections opened by the function / its floor\n");
  for (const { fn, floor, uses, calls } of pairs) {
    reportFigure({
      figure: `Lambda load + first call, ${fn.name}`,
      now: total(fn),
      floor: total(floor),
      unit: 'ms',
      goal: uses.length === 0 && fn.name === 'Healthz' ? '≤ 3×' : '≤ 1.3×',
      note: `${kib(fn).toFixed(0)} KiB (entry ${entryKib(fn).toFixed(0)} KiB) vs a ${kib(floor).toFixed(0)} KiB floor (${uses.length === 0 ? 'an empty handler' : `constructs ${uses.join(', ')}${calls ? ', one failing call' : ''}`}); first call answered ${figures.get(fn)?.status}; median of ${runs}`,
    });
  }
}
