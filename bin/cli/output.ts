import type { Problem } from './api-client.ts';

/** The run fields the CLI prints. */
export interface RunSummary {
  readonly id: string;
  readonly kind: string;
  readonly targetId?: string;
  readonly asset: string;
  readonly state: string;
  readonly runner?: string;
  readonly batchId?: string;
  readonly reason?: string;
  readonly exitCode?: number;
  readonly createdAt: string;
  readonly timings?: Readonly<Record<string, string | number>>;
}

/** Left-aligned columns, two spaces apart; the last column is not padded. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}

export function describeRun(run: RunSummary): string {
  const lines = [
    `run ${run.id}  ${run.state}`,
    `  kind ${run.kind}${run.targetId === undefined ? '' : `  target ${run.targetId}`}  asset ${run.asset}`,
  ];
  if (run.runner !== undefined) lines.push(`  runner ${run.runner}`);
  if (run.batchId !== undefined) lines.push(`  batch ${run.batchId}`);
  if (run.exitCode !== undefined) lines.push(`  exit code ${run.exitCode}`);
  if (run.reason !== undefined) lines.push(`  reason: ${run.reason}`);
  const t = run.timings;
  if (t !== undefined) {
    const parts = [
      ['queue wait', t.queueWaitMs],
      ['launch', t.launchLatencyMs],
      ['start latency', t.startLatencyMs],
      ['run time', t.runTimeMs],
    ].flatMap(([label, value]) => (typeof value === 'number' ? [`${label} ${value} ms`] : []));
    if (parts.length > 0) lines.push(`  ${parts.join(' · ')}`);
  }
  return `${lines.join('\n')}\n`;
}

export const runRows = (runs: readonly RunSummary[]) =>
  table(
    ['ID', 'STATE', 'KIND', 'TARGET', 'ASSET', 'CREATED'],
    runs.map((r) => [r.id, r.state, r.kind, r.targetId ?? '-', r.asset, r.createdAt]),
  );

/** title (status), detail, then each field error / offending target on its own line. */
export function describeProblem(status: number, problem: Problem): string {
  const lines = [`error: ${problem.title ?? 'Request failed'} (HTTP ${status})`];
  if (problem.detail !== undefined && problem.detail !== problem.title) lines.push(`  ${problem.detail}`);
  const targets = problem.targets ?? [];
  for (const t of targets) lines.push(`  - ${t.targetId}: ${t.reason}`);
  if (targets.length === 0) for (const e of problem.errors ?? []) lines.push(`  - ${e.path}: ${e.message}`);
  if (problem.type !== undefined && problem.type !== 'about:blank') lines.push(`  (${problem.type})`);
  return `${lines.join('\n')}\n`;
}
