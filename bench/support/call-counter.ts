/** The SDK's middleware signature, as much of it as counting needs. */
type CountingMiddleware = (
  next: (args: unknown) => Promise<unknown>,
  context: { commandName?: string; [SENT]?: boolean },
) => (args: unknown) => Promise<unknown>;

/** Set on a call's middleware context once a request of it reached the wire. */
const SENT = Symbol('benchCallSent');

/**
 * Counts AWS API calls as `service.Operation` on every client it is given: an
 * `initialize`-step middleware, one count per `client.send` before retries,
 * and only for a call that sent a request — a presigned URL runs the same
 * stack but stops before the wire (its intercept sits before signing), so it
 * is no call. A `deserialize`-step middleware, which only a request on its
 * way out reaches, marks the call as sent.
 *
 * @example
 * const counter = new CallCounter();
 * const ddb = counter.count('DynamoDB', new DynamoDBClient({}));
 * const calls = await counter.measure(() => store.getRun(id).then(() => {})); // Map { 'DynamoDB.GetItem' => 1 }
 */
export class CallCounter {
  #counts = new Map<string, number>();

  count<T extends { middlewareStack: object }>(service: string, client: T): T {
    // Every client's stack takes an initialize-step middleware; their generic types differ per client.
    const stack = client.middlewareStack as { add(middleware: CountingMiddleware, options: object): void };
    stack.add(
      (next, context) => async (args: unknown) => {
        try {
          return await next(args);
        } finally {
          if (context[SENT] === true) {
            const op = `${service}.${(context.commandName ?? '?').replace(/Command$/, '')}`;
            this.#counts.set(op, (this.#counts.get(op) ?? 0) + 1);
          }
        }
      },
      { step: 'initialize', name: 'benchCountCalls' },
    );
    stack.add(
      (next, context) => (args: unknown) => {
        context[SENT] = true;
        return next(args);
      },
      { step: 'deserialize', name: 'benchMarkSent' },
    );
    return client;
  }

  /** How many `op` calls (`service.Operation`) have been counted so far in the current measure. */
  seen(op: string): number {
    return this.#counts.get(op) ?? 0;
  }

  /** The calls `work` made (and nothing counted before or after it). */
  async measure(work: () => Promise<void>): Promise<Map<string, number>> {
    this.#counts = new Map();
    await work();
    const taken = this.#counts;
    this.#counts = new Map();
    return taken;
  }
}

/** The calls of a measured set of phases, by phase. */
type Phases = Record<string, Map<string, number>>;

/** All calls, summed. */
export const sumOf = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

const total = (phases: Phases) => {
  const sum = new Map<string, number>();
  for (const m of Object.values(phases)) for (const [op, c] of m) sum.set(op, (sum.get(op) ?? 0) + c);
  return sum;
};
const perRun = (phases: Phases, n: number) => {
  const t = total(phases);
  return (op: string) => ((t.get(op) ?? 0) / n).toFixed(2);
};

/** The table of calls per run: for one run, and per run of a burst of `burstSize`, in total and by phase. */
export function printCallTable(
  one: { phases: Phases; states: Map<string, number> },
  burst: { phases: Phases; states: Map<string, number> },
  burstSize: number,
): void {
  const allOps = [...new Set([...total(one.phases).keys(), ...total(burst.phases).keys()])].sort();

  console.log(
    `AWS mode on moto, ${process.version}: AWS API calls per run, POST /runs → terminal (ecs runner)`,
  );
  console.log(
    `final states: 1 run ${JSON.stringify(Object.fromEntries(one.states))}; burst ${JSON.stringify(Object.fromEntries(burst.states))}`,
  );
  const pad = (s: string, w: number) => s.padEnd(w);
  const padL = (s: string, w: number) => s.padStart(w);
  console.log(
    `${pad('service.operation', 36)}${padL('1 run', 8)}${padL(`${burstSize}-run burst / run`, 22)}`,
  );
  const oneRun = perRun(one.phases, 1);
  const burstRun = perRun(burst.phases, burstSize);
  for (const op of allOps) console.log(`${pad(op, 36)}${padL(oneRun(op), 8)}${padL(burstRun(op), 22)}`);
  console.log(
    `${pad('total', 36)}${padL(String(sumOf(total(one.phases))), 8)}${padL((sumOf(total(burst.phases)) / burstSize).toFixed(2), 22)}`,
  );
  console.log('by phase (calls per run):');
  for (const phase of Object.keys(one.phases)) {
    const a = one.phases[phase] ?? new Map();
    const b = burst.phases[phase] ?? new Map();
    const ops = [...new Set([...a.keys(), ...b.keys()])]
      .sort()
      .map((op) => `${op} ${a.get(op) ?? 0}/${((b.get(op) ?? 0) / burstSize).toFixed(2)}`);
    console.log(`  ${pad(phase, 20)} ${ops.join(', ')}`);
  }
}
