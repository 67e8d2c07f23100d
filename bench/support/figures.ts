import { appendFileSync } from 'node:fs';

/**
 * One measured figure beside the floor it is judged against, both timed in
 * the same run. `goal` is how the ratio should compare ("≤ 1.3×", "≥ 0.5",
 * "= 1"). Printed as a line; also appended as a JSON line to the file named
 * by BENCH_FIGURES, which `npm run bench:all` reads to print one table.
 */
export interface Figure {
  /** What was measured, e.g. "Lambda load + first call, Healthz". */
  readonly figure: string;
  readonly now: number;
  readonly floor: number;
  /** Unit of `now` and `floor`: "ms", "calls", "MiB", "runs/s", "s". */
  readonly unit: string;
  /** Goal on `now / floor`, e.g. "≤ 1.3×" (or on `now` alone when the floor is 0, e.g. "≤ 1 s"). */
  readonly goal: string;
  /** Free text: how the floor was built, the sample size. */
  readonly note?: string;
  /**
   * The ratio when it is measured in pairs — the median of each round's
   * figure over the floor timed right beside it — rather than `now / floor`
   * of two medians (bench/support/lambda-measure.ts says why).
   */
  readonly pairedRatio?: number;
}

/** The paired ratio when there is one, else now / floor; NaN when the floor is 0 or missing. */
export const ratioOf = (f: Pick<Figure, 'now' | 'floor' | 'pairedRatio'>): number =>
  f.pairedRatio ?? (f.floor > 0 ? f.now / f.floor : Number.NaN);

const fmt = (n: number): string =>
  Number.isFinite(n) ? (Math.abs(n) >= 100 ? n.toFixed(0) : n.toFixed(2)) : '—';

/** Print the figure and, under bench:all, record it. */
export function reportFigure(f: Figure): void {
  const ratio = ratioOf(f);
  console.log(
    `figure: ${f.figure}: ${fmt(f.now)} ${f.unit} (floor ${fmt(f.floor)} ${f.unit}, ratio ${fmt(ratio)}, goal ${f.goal})${f.note === undefined ? '' : ` — ${f.note}`}`,
  );
  const file = process.env.BENCH_FIGURES;
  if (file !== undefined && file !== '') appendFileSync(file, `${JSON.stringify({ ...f, ratio })}\n`);
}
