import { basename } from 'node:path';
import { MAX_ASSET_BYTES } from '../../shared/app/assets.ts';
import type { BatchRollup } from '../../shared/domain/batch.ts';
import type { Client } from './api-client.ts';
import { type CommandName, type OptionValues, positiveInt, runRequest, UsageError } from './args.ts';
import { EXIT, exitCodeForState } from './exit-codes.ts';
import { printLogs } from './follow.ts';
import type { Io } from './io.ts';
import { describeRun, type RunSummary, runRows, table } from './output.ts';
import { formatCounts, watchBatch } from './progress.ts';

export interface Context {
  readonly client: Client;
  readonly io: Io;
  readonly json: boolean;
  /** Poll interval for --follow. */
  readonly intervalMs: number;
}

interface SubmittedBatch {
  readonly batchId: string;
  readonly retryOf?: string;
  readonly runs: readonly RunSummary[];
  readonly failed: readonly { readonly targetId: string; readonly runId: string; readonly reason: string }[];
}

interface Target {
  readonly id: string;
  readonly kind: string;
  readonly cloud: string;
  readonly name: string;
  readonly untargetable?: string;
}

interface Asset {
  readonly path: string;
  readonly size: number;
  readonly type: string;
  readonly replaced?: boolean;
}

const enc = encodeURIComponent;

/** Run one parsed command; returns the exit code. API errors are thrown (main.ts prints them). */
export async function execute(
  command: CommandName,
  args: Readonly<Record<string, string>>,
  options: OptionValues,
  ctx: Context,
): Promise<number> {
  const { client, io } = ctx;
  const print = (value: unknown, human: () => string) => {
    io.stdout.write(ctx.json ? `${JSON.stringify(value, null, 2)}\n` : human());
  };

  switch (command) {
    case 'targets put': {
      if (options.file === undefined) throw new UsageError('targets put needs --file <target.json>');
      let body: unknown;
      try {
        body = JSON.parse((await io.readFile(options.file)).toString('utf8'));
      } catch (error) {
        throw new UsageError(`--file ${options.file}: ${(error as Error).message}`);
      }
      const res = await client.request<Target>('PUT', `/targets/${enc(args.id ?? '')}`, body);
      print(res.body, () => `target ${res.body.id} ${res.status === 201 ? 'created' : 'replaced'}\n`);
      return EXIT.ok;
    }
    case 'targets list': {
      const { body } = await client.request<{ targets: Target[] }>('GET', '/targets');
      print(body, () =>
        table(
          ['ID', 'KIND', 'CLOUD', 'NAME', 'UNTARGETABLE'],
          body.targets.map((t) => [t.id, t.kind, t.cloud, t.name, t.untargetable ?? '']),
        ),
      );
      return EXIT.ok;
    }
    case 'runs submit': {
      const body = {
        ...(await runRequest(options, io.readFile)),
        ...(options.target === undefined ? {} : { targetId: options.target }),
      };
      const headers: Record<string, string> =
        options['idempotency-key'] === undefined ? {} : { 'idempotency-key': options['idempotency-key'] };
      const { body: run } = await client.request<RunSummary>('POST', '/runs', body, headers);
      if (options.follow !== true) {
        print(run, () => describeRun(run));
        return run.state === 'refused' ? EXIT.refused : EXIT.ok;
      }
      if (!ctx.json)
        io.stderr.write(`run ${run.id} ${run.state}${run.reason === undefined ? '' : `: ${run.reason}`}\n`);
      return followRun(ctx, run.id);
    }
    case 'runs get': {
      const { body: run } = await client.request<RunSummary>('GET', `/runs/${enc(args.id ?? '')}`);
      print(run, () => describeRun(run));
      return EXIT.ok;
    }
    case 'runs list': {
      const query = new URLSearchParams();
      if (options.batch !== undefined) query.set('batchId', options.batch);
      if (options.state !== undefined) query.set('state', options.state);
      if (options.limit !== undefined) query.set('limit', String(positiveInt('--limit', options.limit)));
      if (options.cursor !== undefined) query.set('cursor', options.cursor);
      const qs = query.size === 0 ? '' : `?${query}`;
      const { body } = await client.request<{ runs: RunSummary[]; nextCursor?: string }>('GET', `/runs${qs}`);
      print(
        body,
        () =>
          runRows(body.runs) +
          (body.nextCursor === undefined ? '' : `next page: --cursor ${body.nextCursor}\n`),
      );
      return EXIT.ok;
    }
    case 'runs logs': {
      if (options.follow === true) return followRun(ctx, args.id ?? '');
      await printLogs(client, args.id ?? '', io, {
        follow: false,
        intervalMs: ctx.intervalMs,
        out: (t) => io.stdout.write(t),
        err: (t) => io.stderr.write(t),
      });
      return EXIT.ok;
    }
    case 'runs cancel': {
      const { body: run } = await client.request<RunSummary>('POST', `/runs/${enc(args.id ?? '')}/cancel`);
      print(run, () => describeRun(run));
      return EXIT.ok;
    }
    case 'batches submit': {
      if (options.targets === undefined) throw new UsageError('batches submit needs --targets <id,id,…>');
      const targetIds = options.targets
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const body = { ...(await runRequest(options, io.readFile)), targetIds };
      const { body: batch } = await client.request<SubmittedBatch>('POST', '/batches', body);
      return afterBatchSubmitted(ctx, batch, options.follow === true);
    }
    case 'batches get': {
      if (options.follow === true) return followBatch(ctx, args.id ?? '');
      const { body: rollup } = await client.request<BatchRollup>('GET', `/batches/${enc(args.id ?? '')}`);
      print(rollup, () => describeRollup(rollup));
      return EXIT.ok;
    }
    case 'batches retry': {
      const { body: batch } = await client.request<SubmittedBatch>(
        'POST',
        `/batches/${enc(args.id ?? '')}/retry`,
      );
      return afterBatchSubmitted(ctx, batch, options.follow === true);
    }
    case 'assets upload': {
      const file = args.file ?? '';
      let bytes: Buffer;
      try {
        bytes = await io.readFile(file);
      } catch (error) {
        throw new UsageError(`Cannot read ${file}: ${(error as Error).message}`);
      }
      if (bytes.byteLength > MAX_ASSET_BYTES) {
        throw new UsageError(
          `${file} is ${bytes.byteLength} bytes; the API takes assets up to ${MAX_ASSET_BYTES} bytes. Copy larger packages to the storage backend with its own tools (aws s3 cp …)`,
        );
      }
      const body = {
        path: options.path ?? basename(file),
        contentBase64: bytes.toString('base64'),
        ...(options.overwrite === true ? { overwrite: true } : {}),
      };
      const { body: asset } = await client.request<Asset>('POST', '/assets', body);
      print(
        asset,
        () =>
          `${asset.replaced === true ? 'replaced' : 'uploaded'} ${asset.path} (${asset.type}, ${asset.size} bytes)\n`,
      );
      return EXIT.ok;
    }
    case 'assets list': {
      const { body } = await client.request<{ assets: Asset[] }>('GET', '/assets');
      print(body, () =>
        table(
          ['TYPE', 'SIZE', 'PATH'],
          body.assets.map((a) => [a.type, String(a.size), a.path]),
        ),
      );
      return EXIT.ok;
    }
  }
}

/** Stream a run's output until it ends; with --json, lines go to stderr and the final run to stdout. */
async function followRun(ctx: Context, runId: string): Promise<number> {
  const { io } = ctx;
  const state = await printLogs(ctx.client, runId, io, {
    follow: true,
    intervalMs: ctx.intervalMs,
    out: (t) => (ctx.json ? io.stderr : io.stdout).write(t),
    err: (t) => io.stderr.write(t),
  });
  const { body: run } = await ctx.client.request<RunSummary>('GET', `/runs/${enc(runId)}`);
  if (ctx.json) io.stdout.write(`${JSON.stringify(run, null, 2)}\n`);
  else io.stderr.write(`run ${run.id} ${run.state}${run.reason === undefined ? '' : `: ${run.reason}`}\n`);
  return exitCodeForState(state === run.state ? state : run.state);
}

async function afterBatchSubmitted(ctx: Context, batch: SubmittedBatch, follow: boolean): Promise<number> {
  const { io } = ctx;
  if (!follow || !ctx.json) {
    const summary = [
      `batch ${batch.batchId}${batch.retryOf === undefined ? '' : ` (retry of ${batch.retryOf})`}: ${batch.runs.length} queued, ${batch.failed.length} refused`,
      ...batch.failed.map((f) => `  - ${f.targetId}: ${f.reason}`),
    ].join('\n');
    if (ctx.json) io.stdout.write(`${JSON.stringify(batch, null, 2)}\n`);
    else (follow ? io.stderr : io.stdout).write(`${summary}\n`);
  }
  if (!follow) return batch.runs.length > 0 || batch.failed.length === 0 ? EXIT.ok : EXIT.refused;
  return followBatch(ctx, batch.batchId);
}

async function followBatch(ctx: Context, batchId: string): Promise<number> {
  const { io } = ctx;
  const rollup = await watchBatch(ctx.client, batchId, io, {
    intervalMs: ctx.intervalMs,
    tty: !ctx.json && io.stdout.isTTY === true,
    write: (t) => (ctx.json ? io.stderr : io.stdout).write(t),
  });
  if (ctx.json) io.stdout.write(`${JSON.stringify(rollup, null, 2)}\n`);
  else if (rollup.failed.length > 0) io.stdout.write(failedLines(rollup));
  return rollup.failed.length === 0 ? EXIT.ok : EXIT.failed;
}

const failedLines = (rollup: BatchRollup) =>
  rollup.failed
    .map((f) => `  - ${f.targetId ?? f.runId} ${f.state}${f.reason === undefined ? '' : `: ${f.reason}`}\n`)
    .join('');

function describeRollup(rollup: BatchRollup): string {
  return (
    [
      `batch ${rollup.batchId}${rollup.retryOf === undefined ? '' : ` (retry of ${rollup.retryOf})`}: ${rollup.kind} ${rollup.asset}`,
      `  ${formatCounts(rollup)}${rollup.complete ? ', complete' : ''}`,
      '',
    ].join('\n') + failedLines(rollup)
  );
}
