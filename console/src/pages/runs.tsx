import { Component } from 'preact';
import { useState } from 'preact/hooks';
import {
  api,
  asProblem,
  networkProblem,
  type Problem,
  RUN_KINDS,
  RUN_STATES,
  type Run,
  type RunKind,
  type RunState,
} from '../api/client.ts';
import { StateBadge } from '../components/badges.tsx';
import { type Column, ListTable } from '../components/list-table.tsx';
import { FilterSelect, ValueOptions } from '../components/pickers.tsx';
import { ProblemView } from '../components/problem.tsx';
import { duration, when } from '../format.ts';
import { usePoll } from '../hooks.ts';
import { href, navigate } from '../router.ts';
import { BatchPanel } from './batch.tsx';

const PAGE = 100;
/** With a kind filter (applied here: the API filters by state and batch only), scan at most this many pages per click. */
const MAX_SCAN_PAGES = 10;

/** The runs table's columns: its layout is fixed (styles/tables.css), so each but Asset, which takes the rest, has a width. */
const RUN_COLUMNS: readonly Column[] = [
  { label: 'Run', width: '17rem' },
  { label: 'State', width: '7rem' },
  { label: 'Kind', width: '8rem' },
  { label: 'Target', width: '9rem' },
  'Asset',
  { label: 'Created', width: '11rem' },
  { label: 'Run time', width: '6rem' },
];

interface Filters {
  readonly state?: RunState;
  readonly kind?: RunKind;
  readonly batchId?: string;
}

async function fetchPage(filters: Filters, cursor: string | undefined, signal?: AbortSignal) {
  const runs: Run[] = [];
  let next = cursor;
  for (let scanned = 0; scanned < (filters.kind ? MAX_SCAN_PAGES : 1); scanned++) {
    const { data, error, response } = await api.GET('/runs', {
      params: {
        query: {
          limit: PAGE,
          ...(filters.state ? { state: filters.state } : {}),
          ...(filters.batchId ? { batchId: filters.batchId } : {}),
          ...(next ? { cursor: next } : {}),
        },
      },
      ...(signal ? { signal } : {}),
    });
    if (!data) throw asProblem(error, response);
    runs.push(...(filters.kind ? data.runs.filter((r) => r.kind === filters.kind) : data.runs));
    next = data.nextCursor;
    if (next === undefined || runs.length >= PAGE / 2) break;
  }
  return { runs, next };
}

/** Newer runs and new states from a refresh of the first page, without losing the pages already loaded. */
function merge(loaded: readonly Run[], fresh: readonly Run[]): Run[] {
  const byId = new Map(fresh.map((r) => [r.id, r]));
  const newest = loaded[0]?.id ?? '';
  const added = fresh.filter((r) => r.id > newest && !loaded.some((l) => l.id === r.id));
  return [...added, ...loaded.map((r) => byId.get(r.id) ?? r)];
}

export function RunsPage({ query, batch }: { query: URLSearchParams; batch?: string }) {
  const filters: Filters = {
    ...(RUN_STATES.includes(query.get('state') as RunState) ? { state: query.get('state') as RunState } : {}),
    ...(RUN_KINDS.includes(query.get('kind') as RunKind) ? { kind: query.get('kind') as RunKind } : {}),
    ...((batch ?? query.get('batch')) ? { batchId: batch ?? query.get('batch') ?? '' } : {}),
  };
  const key = `${filters.state}|${filters.kind}|${filters.batchId}`;
  const [rows, setRows] = useState<{ key: string; runs: Run[]; next?: string | undefined; loaded: boolean }>({
    key,
    runs: [],
    loaded: false,
  });
  const [problem, setProblem] = useState<Problem>();
  const [loadingMore, setLoadingMore] = useState(false);

  usePoll(
    async (signal) => {
      try {
        const page = await fetchPage(filters, undefined, signal);
        setRows((current) =>
          current.key === key && current.loaded
            ? { ...current, runs: merge(current.runs, page.runs) }
            : { key, runs: page.runs, next: page.next, loaded: true },
        );
        setProblem(undefined);
      } catch (error) {
        if (!signal.aborted) setProblem(error instanceof Error ? networkProblem(error) : (error as Problem));
      }
      return true;
    },
    4000,
    [key],
  );

  async function loadMore() {
    setLoadingMore(true);
    try {
      const page = await fetchPage(filters, rows.next);
      setRows((current) => ({ ...current, runs: [...current.runs, ...page.runs], next: page.next }));
    } catch (error) {
      setProblem(error instanceof Error ? networkProblem(error) : (error as Problem));
    } finally {
      setLoadingMore(false);
    }
  }

  function applyFilters(chosen: { state: string; kind: string; batch: string }) {
    const batchId = chosen.batch.trim();
    const next = { state: chosen.state, kind: chosen.kind };
    if (batch !== undefined && batchId === batch) navigate(`/batches/${encodeURIComponent(batch)}`, next);
    else navigate('/runs', { ...next, batch: batchId });
  }

  const shown = rows.key === key ? rows : { runs: [], loaded: false, next: undefined };
  return (
    <section aria-labelledby="runs-h">
      <div class="page-head">
        <h1 id="runs-h">{filters.batchId ? 'Batch' : 'Runs'}</h1>
        <a class="button" href={href('/new')}>
          New run
        </a>
      </div>
      {filters.batchId && <BatchPanel batchId={filters.batchId} />}
      <FilterForm key={key} filters={filters} onApply={applyFilters} />
      {problem && <ProblemView problem={problem} />}
      <ListTable label="Runs table" class="runs" columns={RUN_COLUMNS}>
        {shown.runs.map((run) => (
          <RunRow key={run.id} run={run} />
        ))}
      </ListTable>
      <p class="list-foot" aria-live="polite">
        {shown.loaded ? `${shown.runs.length} run${shown.runs.length === 1 ? '' : 's'} shown` : 'Loading…'}
        {shown.next !== undefined && (
          <button type="button" class="secondary" onClick={loadMore} disabled={loadingMore}>
            {loadingMore ? 'Loading…' : 'Load more'}
          </button>
        )}
      </p>
    </section>
  );
}

/** Its own state, so a refresh of the list never resets a choice the operator has not applied yet. */
function FilterForm({
  filters,
  onApply,
}: {
  filters: Filters;
  onApply: (chosen: { state: string; kind: string; batch: string }) => void;
}) {
  const [state, setState] = useState<string>(filters.state ?? '');
  const [kind, setKind] = useState<string>(filters.kind ?? '');
  const [batch, setBatch] = useState(filters.batchId ?? '');
  return (
    <form
      class="filters"
      aria-label="Filter runs"
      onSubmit={(e) => {
        e.preventDefault();
        onApply({ state, kind, batch });
      }}
    >
      <FilterSelect label="State" name="state" value={state} onChange={setState}>
        <ValueOptions values={RUN_STATES} />
      </FilterSelect>
      <FilterSelect label="Kind" name="kind" value={kind} onChange={setKind}>
        <ValueOptions values={RUN_KINDS} />
      </FilterSelect>
      <label>
        Batch id
        <input
          name="batch"
          value={batch}
          spellcheck={false}
          onInput={(e) => setBatch(e.currentTarget.value)}
        />
      </label>
      <button type="submit">Apply</button>
    </form>
  );
}

/**
 * One row, re-rendered only when its run object changes: a refresh replaces
 * the runs of the first page and keeps every other loaded row as it was, so a
 * list of 1,000 diffs about 100 rows per poll.
 */
class RunRow extends Component<{ run: Run }> {
  override shouldComponentUpdate(next: { run: Run }) {
    return next.run !== this.props.run;
  }
  override render() {
    const { run } = this.props;
    return (
      <tr>
        <td>
          <a href={href(`/runs/${encodeURIComponent(run.id)}`)}>
            <code>{run.id}</code>
          </a>
        </td>
        <td>
          <StateBadge state={run.state} />
        </td>
        <td>{run.kind}</td>
        <td>{run.targetId ?? '—'}</td>
        <td class="wrap">{run.asset}</td>
        <td>{when(run.createdAt)}</td>
        <td>{duration(run.timings.runTimeMs)}</td>
      </tr>
    );
  }
}
