import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { reportFigure } from './figures.ts';
import { type Client, FIRST_CALLS } from './lambda-floors.ts';
import type { Bundle, PairSamples, Sample } from './lambda-measure.ts';

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

/** Prints the table of the measured pairs and reports each function's figure. */
export function printFigures(measured: readonly PairSamples<Pair>[], runs: number): void {
  const total = (s: Sample): number => s.load + s.call;
  console.log(
    `Lambda bundles (as infra/lambda-bundle.ts builds them), ${runs} rounds of fresh node processes, each function beside its floor`,
  );
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
  const rows = measured.map(({ pair: { fn, floor, uses, calls }, fn: f, floor: g, ratio }) => [
    f.handler === false ? `${fn.name} (no handler export)` : fn.name,
    kib(fn).toFixed(1),
    entryKib(fn).toFixed(1),
    f.load.toFixed(1),
    total(f).toFixed(1),
    kib(floor).toFixed(1),
    total(g).toFixed(1),
    ratio.toFixed(2),
    f.status,
    `${f.connects}/${g.connects}`,
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
  console.log(
    "ms: medians; ratio: the median of each round's load+1st over its floor's, timed back to back; answered: the first call's status; conns: connections opened by the function / its floor\n",
  );
  for (const {
    pair: { fn, floor, uses, calls },
    fn: f,
    floor: g,
    ratio,
  } of measured) {
    reportFigure({
      figure: `Lambda load + first call, ${fn.name}`,
      now: total(f),
      floor: total(g),
      unit: 'ms',
      goal: goalOf(uses),
      pairedRatio: ratio,
      note: `${kib(fn).toFixed(0)} KiB (entry ${entryKib(fn).toFixed(0)} KiB) vs a ${kib(floor).toFixed(0)} KiB floor (${uses.length === 0 ? 'an empty handler' : `constructs ${uses.join(', ')}${calls ? ', one failing call' : ''}`}); first call answered ${f.status}; ratio: median of ${runs} back-to-back pairs`,
    });
  }
}

/**
 * The issue's goal for a function's load + first call: ≤ 1.3× a floor that constructs the SDK clients the
 * handler uses, and ≤ 3× an empty bundle for a handler that needs none (the issue names Healthz; GetOpenapi,
 * a constant document, needs none either). Against an empty bundle of about 2 ms, any content at all is a
 * large ratio: 61 KB of JSON text is 0.9 ms.
 */
const goalOf = (uses: readonly string[]): string => (uses.length === 0 ? '≤ 3×' : '≤ 1.3×');
