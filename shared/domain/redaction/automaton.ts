import { holdingBack, type Redactor, ScanOutput } from './redactor.ts';

/**
 * Aho–Corasick automaton over UTF-16 code units. Characters are mapped to
 * classes (0: in no pattern, which always leads back to the root). States are
 * numbered breadth-first, so the shallow states, where scanning spends nearly
 * all its time, come first and get dense transition rows; deeper states keep
 * their own edges in a map and fall back along failure links.
 *
 * A dense cell holds the target's row offset (`id × classes`) when the target
 * is a dense state that ends no pattern — the only case the hot loop handles
 * itself — and `~id` otherwise.
 */
export interface Automaton {
  readonly classOf: Int32Array;
  readonly classes: number;
  readonly denseStates: number;
  readonly dense: Int32Array;
  readonly deep: Map<number, number>;
  readonly fail: Int32Array;
  /** Length of the longest pattern that ends in this state (0: none). */
  readonly outLen: Int32Array;
  /** Depth of the longest suffix state that can still grow into a longer pattern. */
  readonly live: Int32Array;
  /** Length of the longest pattern. */
  readonly longest: number;
}

/** Dense rows go to states up to this depth, within {@link DENSE_BUDGET} cells. */
const DENSE_DEPTH = 3;
const DENSE_BUDGET = 1 << 20;

export function buildAutomaton(patterns: readonly string[]): Automaton {
  const classOf = new Int32Array(65536);
  let classes = 1;
  let total = 1;
  for (const p of patterns) {
    total += p.length;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      if (classOf[c] === 0) classOf[c] = classes++;
    }
  }

  // The trie, in insertion order.
  const depthOf = new Int32Array(total);
  const parentOf = new Int32Array(total);
  const viaClass = new Int32Array(total);
  const terminal = new Int32Array(total);
  const firstChild = new Int32Array(total).fill(-1);
  const nextSibling = new Int32Array(total).fill(-1);
  const edges = new Map<number, number>();
  let count = 1;
  for (const p of patterns) {
    let s = 0;
    for (let i = 0; i < p.length; i++) {
      const cls = classOf[p.charCodeAt(i)]!;
      const key = s * classes + cls;
      let t = edges.get(key);
      if (t === undefined) {
        t = count++;
        edges.set(key, t);
        depthOf[t] = depthOf[s]! + 1;
        parentOf[t] = s;
        viaClass[t] = cls;
        nextSibling[t] = firstChild[s]!;
        firstChild[s] = t;
      }
      s = t;
    }
    terminal[s] = p.length;
  }

  // Breadth-first numbering.
  const order = new Int32Array(count);
  const idOf = new Int32Array(count);
  let tail = 1;
  for (let head = 0; head < tail; head++) {
    for (let c = firstChild[order[head]!]!; c !== -1; c = nextSibling[c]!) {
      idOf[c] = tail;
      order[tail++] = c;
    }
  }

  let denseStates = 1;
  while (
    denseStates < count &&
    depthOf[order[denseStates]!]! <= DENSE_DEPTH &&
    (denseStates + 1) * classes <= DENSE_BUDGET
  ) {
    denseStates++;
  }
  // First pass: dense cells hold plain state ids.
  const dense = new Int32Array(denseStates * classes);
  const deep = new Map<number, number>();
  const fail = new Int32Array(count);
  const outLen = new Int32Array(count);
  const live = new Int32Array(count);
  const stepById = (from: number, cls: number): number => {
    let s = from;
    for (;;) {
      if (s < denseStates) return dense[s * classes + cls]!;
      const t = deep.get(s * classes + cls);
      if (t !== undefined) return t;
      s = fail[s]!;
    }
  };
  for (let id = 0; id < count; id++) {
    const node = order[id]!;
    const parent = idOf[parentOf[node]!]!;
    fail[id] = id === 0 || parent === 0 ? 0 : stepById(fail[parent]!, viaClass[node]!);
    const f = fail[id]!;
    outLen[id] = terminal[node]! > 0 ? terminal[node]! : outLen[f]!;
    live[id] = firstChild[node] !== -1 ? depthOf[node]! : live[f]!;
    if (id < denseStates) {
      const row = id * classes;
      if (id !== 0) dense.copyWithin(row, f * classes, f * classes + classes);
      for (let c = firstChild[node]!; c !== -1; c = nextSibling[c]!) dense[row + viaClass[c]!] = idOf[c]!;
    } else {
      for (let c = firstChild[node]!; c !== -1; c = nextSibling[c]!) {
        deep.set(id * classes + viaClass[c]!, idOf[c]!);
      }
    }
  }
  // Second pass: encode the dense cells for the hot loop.
  for (let i = 0; i < dense.length; i++) {
    const t = dense[i]!;
    dense[i] = t < denseStates && outLen[t] === 0 ? t * classes : ~t;
  }
  const longest = patterns.reduce((max, p) => Math.max(max, p.length), 0);
  return { classOf, classes, denseStates, dense, deep, fail, outLen, live, longest };
}

/** The state after `from` reads a character of class `cls` (the slow path: state ids, failure links). */
export function stepOf(a: Automaton): (from: number, cls: number) => number {
  const { classes, denseStates, dense, deep, fail } = a;
  return (from, cls) => {
    let s = from;
    for (;;) {
      if (s < denseStates) {
        const v = dense[s * classes + cls]!;
        return v >= 0 ? v / classes : ~v;
      }
      const t = deep.get(s * classes + cls);
      if (t !== undefined) return t;
      s = fail[s]!;
    }
  };
}

/** The streaming redactor of one automaton over the text as it is (the textual forms). */
export function scanner(a: Automaton, mask: string): Redactor {
  const { classOf, classes, denseStates, dense, outLen, live } = a;

  const step = stepOf(a);

  /**
   * Scan `text` from a decided position. The candidate is the leftmost match
   * found so far (longest for its start); it is committed once no pattern
   * still in progress could start at or before it, and scanning restarts
   * after it. When `final` is false, text from the first undecided position
   * on is held back.
   */
  const scan = (text: string, final: boolean): { out: string; rest: string } => {
    const o = new ScanOutput(text);
    let s = 0;
    let j = 0;
    const n = text.length;
    for (;;) {
      if (o.start < 0 && s < denseStates) {
        // Hot loop: no match pending, shallow states, no pattern ends here.
        let row = s * classes;
        let v = 0;
        while (j < n) {
          v = dense[row + classOf[text.charCodeAt(j)]!]!;
          j++;
          if (v < 0) break;
          row = v;
        }
        if (v >= 0) {
          s = row / classes;
          break;
        }
        s = ~v;
      } else if (j < n) {
        s = step(s, classOf[text.charCodeAt(j)]!);
        j++;
      } else if (o.start < 0 || !final) {
        break;
      }
      // (At the end of a final scan with a match pending, this falls through to commit it.)
      o.offer(outLen[s]!, j);
      if (!o.decided(j, live[s]!, j < n || !final)) continue;
      // Commit the candidate: nothing still in progress can start at or before it.
      j = o.end;
      o.commit(o.start, j, mask);
      s = 0;
    }
    // A pending match was not committed, so a pattern in progress starts at or before it: hold from there.
    return o.result(final, n - live[s]!);
  };

  return holdingBack(scan);
}
