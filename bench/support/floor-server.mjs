// The floor local mode is judged against (bench/local-footprint.ts, bench/dispatch-latency.ts): a Node HTTP
// server over one better-sqlite3 database in WAL mode with synchronous=FULL, as local mode opens its own,
// that answers GET /healthz and commits one row per POST. Plain .mjs, run by node itself (no tsx, no type
// stripping), so nothing but the floor is in its memory or start-up time. Prints "listening on <url>".
import { createServer } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';

const dir = process.env.FLOOR_DATA_DIR;
if (dir === undefined || dir === '') throw new Error('FLOOR_DATA_DIR is not set');
const db = new Database(join(dir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.exec('CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT');
const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST') insert.run(Buffer.concat(chunks).toString('utf8') || '{}');
    res.writeHead(req.method === 'POST' ? 202 : 200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
});
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stderr.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
