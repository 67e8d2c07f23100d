/**
 * Redaction throughput: 100 random secrets (16–64 characters, quotes and
 * backslashes included, so most of their encoded forms differ from the raw
 * value) over Ansible-like log text with some of them embedded in various
 * forms, pushed in chunks of 4–64 KiB. Baselines: a plain copy of the same
 * chunks, a Node `PassThrough`, a loop that only reads every character (the
 * floor for anything that looks at the text), and the shim's line pipeline
 * with no secrets; on a small slice, the previous design (a first-character
 * set and `startsWith` per pattern) for reference. Each timed path runs
 * `--repeat` times (default 3) and the best and median rates are shown, since
 * on a shared machine single runs are noisy. Prints figures; the only check
 * is that something was masked and no raw secret came through.
 *
 *   npm run bench:redaction                # 50 MB
 *   npm run bench:redaction -- --mb 200    # more text; also --secrets N, --repeat N,
 *                                          # --old-mb N (0 skips the previous design)
 */
import { cpus, loadavg } from 'node:os';
import { PassThrough } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { pipeLines } from '../runners/shim/lines.ts';
import {
  compileRedaction,
  DEFAULT_MASK,
  encodedPatterns,
  redactionPatterns,
} from '../shared/domain/redaction.ts';

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} needs a non-negative number`);
  return value;
}

const totalMb = option('mb', 50);
const secretCount = option('secrets', 100);
const oldMb = option('old-mb', 0.25);
const repeat = Math.max(1, Math.round(option('repeat', 3)));
const totalChars = Math.round(totalMb * 1e6);

// Deterministic, so runs compare: mulberry32.
let seed = 0x5eed;
const random = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const between = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

const SECRET_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/+=!@#$%^&\'"\\ ';
const secrets = Array.from({ length: secretCount }, () =>
  Array.from({ length: between(16, 64) }, () => pick([...SECRET_CHARS])).join(''),
);

/** How a secret shows up in a log line. */
const FORMS: readonly ((s: string) => string)[] = [
  (s) => s,
  (s) => JSON.stringify(s).slice(1, -1),
  (s) => Buffer.from(`user:${s}`).toString('base64'),
  (s) => encodeURIComponent(s),
  (s) => `'${s.replaceAll("'", `'\\''`)}'`,
  // Wrapped dumps, as `base64` (76 columns) and `openssl base64` (64, here with CRLF) and `xxd -p` print them.
  (s) => `\n${Buffer.from(`key: ${s}\n`).toString('base64').replace(/.{76}/g, '$&\n')}`,
  (s) => `\r\n${Buffer.from(`${s}\n`).toString('base64').replace(/.{64}/g, '$&\r\n')}`,
  (s) => `\n${Buffer.from(s).toString('hex').replace(/.{60}/g, '$&\n')}`,
];

const HOSTS = ['web-01.lab.internal', 'web-02.lab.internal', 'db-01.lab.internal', 'localhost'];
const TASKS = ['install packages', 'template nginx.conf', 'ensure service is running', 'create users'];

/** Ansible-like output, one secret embedded in about one line in 200. */
function corpus(chars: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let n = 0; size < chars; n++) {
    const host = pick(HOSTS);
    let line: string;
    switch (n % 6) {
      case 0:
        line = `TASK [common : ${pick(TASKS)}] ${'*'.repeat(between(20, 60))}`;
        break;
      case 1:
        line = `changed: [${host}] => (item={'name': 'pkg-${between(1, 999)}', 'state': 'present'})`;
        break;
      case 2:
        line = `ok: [${host}] => {"changed": false, "msg": "All items completed", "rc": 0}`;
        break;
      case 3:
        line = `    "stdout_lines": ["Reading package lists...", "Building dependency tree... ${between(1, 99)}%"]`;
        break;
      case 4:
        line = `PLAY RECAP ${host} : ok=${between(1, 40)} changed=${between(0, 9)} unreachable=0 failed=0`;
        break;
      default:
        line = `[WARNING]: Platform linux on host ${host} is using the discovered Python interpreter`;
    }
    if (random() < 1 / 200) line += ` "password": "${pick(FORMS)(pick(secrets))}"`;
    lines.push(line);
    size += line.length + 1;
  }
  return `${lines.join('\n')}\n`;
}

const CORPUS_CHARS = Math.min(totalChars, 8e6);
const text = corpus(CORPUS_CHARS);
const bytes = Buffer.from(text, 'utf8');
if (bytes.length !== text.length)
  throw new Error('the corpus must be ASCII so that chunk sizes mean the same in both');

/** Chunk boundaries over `chars` characters of the corpus, repeated as often as needed. */
function chunkPlan(chars: number): { from: number; to: number }[] {
  const plan: { from: number; to: number }[] = [];
  let pos = 0;
  let done = 0;
  while (done < chars) {
    const size = Math.min(between(4 * 1024, 64 * 1024), text.length - pos, chars - done);
    plan.push({ from: pos, to: pos + size });
    done += size;
    pos = pos + size === text.length ? 0 : pos + size;
  }
  return plan;
}

interface Row {
  readonly name: string;
  readonly mb: number;
  /** Seconds per run, fastest first. */
  readonly seconds: readonly number[];
}

type Plan = readonly { readonly from: number; readonly to: number }[];

async function time(
  name: string,
  chars: number,
  run: (plan: Plan) => void | Promise<void>,
  runs = repeat,
): Promise<Row> {
  const plan = chunkPlan(chars);
  const seconds: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await run(plan);
    seconds.push((performance.now() - start) / 1000);
  }
  return { name, mb: chars / 1e6, seconds: seconds.sort((a, b) => a - b) };
}

// ---------------------------------------------------------------- contenders

let sink = 0;

const copy = (plan: Plan): void => {
  const forward = (chunk: string): string => chunk;
  for (const { from, to } of plan) sink += forward(text.slice(from, to)).length;
};

const readEveryChar = (plan: Plan): void => {
  for (const { from, to } of plan) {
    const chunk = text.slice(from, to);
    let h = 0;
    for (let i = 0; i < chunk.length; i++) h = (h + chunk.charCodeAt(i)) | 0;
    sink += h & 1;
  }
};

const passThrough = (plan: Plan): Promise<void> =>
  new Promise((resolve) => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => {
      sink += chunk.length;
    });
    stream.on('end', resolve);
    for (const { from, to } of plan) stream.write(bytes.subarray(from, to));
    stream.end();
  });

const { base64: base64Patterns, hex: hexPatterns } = encodedPatterns(secrets);
const patterns = [...redactionPatterns(secrets), ...base64Patterns, ...hexPatterns];
// Best of a few builds: the figure is the build, not a garbage collection that happens to fall into it.
const builds = Array.from({ length: 5 }, () => {
  const start = performance.now();
  const built = compileRedaction(secrets);
  return { built, ms: performance.now() - start };
}).sort((a, b) => a.ms - b.ms);
const compiled = (builds[0] as (typeof builds)[number]).built;
const buildMs = (builds[0] as (typeof builds)[number]).ms;
const longest = Math.max(...patterns.map((p) => p.length));

const redact = (plan: Plan): void => {
  const r = compiled.redactor();
  for (const { from, to } of plan) sink += r.push(text.slice(from, to)).length;
  sink += r.flush().length;
};

const decodeAndRedact = (plan: Plan): void => {
  const decoder = new StringDecoder('utf8');
  const r = compiled.redactor();
  for (const { from, to } of plan) sink += r.push(decoder.write(bytes.subarray(from, to))).length;
  sink += r.push(decoder.end()).length + r.flush().length;
};

const noSecrets = compileRedaction([]);
const shimPipeline = async (plan: Plan, withSecrets = true): Promise<void> => {
  const stream = new PassThrough();
  const piped = pipeLines(stream, (withSecrets ? compiled : noSecrets).redactor(), (line) => {
    sink += line.length + 1;
  });
  for (const { from, to } of plan) stream.write(bytes.subarray(from, to));
  stream.end();
  await piped.done;
};

/** The previous design, for reference: a first-character set, then `startsWith` for each pattern, longest first. */
function previousDesign(plan: Plan): void {
  const firstChars = new Set(patterns.map((p) => p.charAt(0)));
  let held = '';
  const scan = (input: string): string => {
    let out = '';
    let plainFrom = 0;
    let i = 0;
    while (i < input.length) {
      if (!firstChars.has(input.charAt(i))) {
        i++;
        continue;
      }
      let matched: string | undefined;
      let undecided = false;
      for (const p of patterns) {
        if (p.length <= input.length - i) {
          if (input.startsWith(p, i)) {
            matched = p;
            break;
          }
        } else if (p.startsWith(input.slice(i))) {
          undecided = true;
          break;
        }
      }
      if (undecided) {
        held = input.slice(i);
        return out + input.slice(plainFrom, i);
      }
      if (matched === undefined) {
        i++;
      } else {
        out += input.slice(plainFrom, i) + DEFAULT_MASK;
        i += matched.length;
        plainFrom = i;
      }
    }
    held = '';
    return out + input.slice(plainFrom);
  };
  for (const { from, to } of plan) sink += scan(held + text.slice(from, to)).length;
}

// ---------------------------------------------------------------- run

// Sanity: one pass over the corpus masks something and lets no raw secret through.
// (A distinct mask: Ansible's TASK lines are full of asterisks.)
const CHECK_MASK = '[MASKED]';
const check = compiled.redactor(CHECK_MASK);
const checked = check.push(text) + check.flush();
const masks = checked.split(CHECK_MASK).length - 1;
const leaks = secrets.filter((s) => checked.includes(s)).length;

// Warm the JIT on a few megabytes of each before timing.
const warm = chunkPlan(Math.min(totalChars, 4e6));
copy(warm);
readEveryChar(warm);
redact(warm);
decodeAndRedact(warm);
await passThrough(warm);
await shimPipeline(warm);
await shimPipeline(warm, false);

const rows: Row[] = [
  await time('plain copy (forward each chunk)', totalChars, copy),
  await time('Node PassThrough (Buffer chunks)', totalChars, passThrough),
  await time('read every character (charCodeAt loop)', totalChars, readEveryChar),
  await time('shim pipeLines, no secrets', totalChars, (plan) => shimPipeline(plan, false)),
  await time('redactor (string chunks)', totalChars, redact),
  await time('decode + redactor (Buffer chunks)', totalChars, decodeAndRedact),
  await time(`shim pipeLines, ${secretCount} secrets`, totalChars, (plan) => shimPipeline(plan)),
];
if (oldMb > 0) {
  rows.push(
    await time('previous design (startsWith per pattern)', Math.round(oldMb * 1e6), previousDesign, 1),
  );
}

const best = (row: Row): number => row.mb / (row.seconds[0] ?? Number.NaN);
const median = (row: Row): number =>
  row.mb / (row.seconds[Math.floor((row.seconds.length - 1) / 2)] ?? Number.NaN);
const [copyRow, passRow, readRow, plainShimRow] = rows as [Row, Row, Row, Row];
const cell = (text: string, width: number): string => text.padStart(width);
const rate = (n: number): string => cell(n >= 1000 ? n.toFixed(0) : n.toPrecision(3), 10);
const ratio = (a: number, b: number): string =>
  cell(a / b < 0.01 ? (a / b).toExponential(1) : (a / b).toFixed(3), 9);

console.log(
  `redaction bench: ${secretCount} secrets → ${patterns.length} patterns (${base64Patterns.length} base64, ` +
    `${hexPatterns.length} hex; longest ${longest} chars), ` +
    `built in ${buildMs.toFixed(0)} ms; ${masks} masks in one ${(text.length / 1e6).toFixed(1)} MB corpus pass, ` +
    `${leaks} raw secrets leaked`,
);
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}, node ${process.version}; chunks 4–64 KiB; ${repeat} runs per path`,
);
console.log('');
console.log(
  `${'path'.padEnd(46)}${cell('MB', 7)}${cell('best MB/s', 10)}${cell('median', 10)}` +
    `${cell('÷copy', 9)}${cell('÷PassThr', 9)}${cell('÷read', 9)}${cell('÷shim/0', 9)}`,
);
for (const row of rows) {
  console.log(
    `${row.name.padEnd(46)}${cell(row.mb.toFixed(2), 7)}${rate(best(row))}${rate(median(row))}` +
      `${ratio(best(row), best(copyRow))}${ratio(best(row), best(passRow))}` +
      `${ratio(best(row), best(readRow))}${ratio(best(row), best(plainShimRow))}`,
  );
}
if (sink < 0) console.log(sink); // Keeps the sink observable so nothing is optimised away.
