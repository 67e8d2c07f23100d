import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { brotliCompressSync, gzipSync } from 'node:zlib';

/** One file of the built console, held in memory with its compressed forms (each made when first asked for). */
export interface StaticFile {
  readonly body: Buffer;
  readonly gzip: Buffer;
  readonly br: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  readonly etag: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The console talks only to its own origin and runs only its own files: no
 * inline script or style, no framing, no plugins. (Inline `style` set from
 * script through the CSSOM is not governed by style-src.)
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=()',
} as const;

const GZIP = { level: 9 } as const;

/**
 * Compressed forms are made when a client first asks for them, not at start:
 * brotli at its default quality takes a while on the console's scripts (start-up
 * waited ~1.4 s for it here), and an API-only local mode never needs them (nor
 * the few MiB brotli's encoder leaves resident).
 */
function load(path: string, cacheControl: string): StaticFile {
  const body = readFileSync(path);
  let gz: Buffer | undefined;
  let br: Buffer | undefined;
  const file: StaticFile = {
    body,
    get gzip() {
      gz ??= gzipSync(body, GZIP);
      return gz;
    },
    get br() {
      br ??= brotliCompressSync(body);
      return br;
    },
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    headers: {
      'content-type': CONTENT_TYPES[extname(path)] ?? 'application/octet-stream',
      'cache-control': cacheControl,
      vary: 'accept-encoding',
      ...SECURITY_HEADERS,
    },
  };
  return file;
}

/**
 * The built console (`console/dist`) as a fixed map from URL path to file,
 * read once at start. Only `/`, `/index.html` and the regular files directly
 * in `static/` are in it; a request is looked up by its exact raw path, so no
 * escape, `..` or symlink can reach anything else. Vite names those files by
 * their content hash: they are cached for a year, while `index.html` is
 * revalidated on every load so a new build is picked up at once.
 *
 * @returns undefined when the console has not been built.
 *
 * @example
 * const site = loadStaticSite('console/dist');
 * site?.get('/'); // index.html
 */
export function loadStaticSite(dir: string): ReadonlyMap<string, StaticFile> | undefined {
  const index = join(dir, 'index.html');
  if (!existsSync(index) || !lstatSync(index).isFile()) return undefined;
  const files = new Map<string, StaticFile>();
  const page = load(index, 'no-cache');
  files.set('/', page);
  files.set('/index.html', page);
  const assets = join(dir, 'static');
  if (existsSync(assets)) {
    for (const entry of readdirSync(assets, { withFileTypes: true })) {
      // Only plain files with plain names: no symlinks, folders or names that would need escaping.
      if (!entry.isFile() || !/^[A-Za-z0-9._-]+$/.test(entry.name) || entry.name.startsWith('.')) continue;
      files.set(
        `/static/${entry.name}`,
        load(join(assets, entry.name), 'public, max-age=31536000, immutable'),
      );
    }
  }
  return files;
}

/** br when the client takes it, then gzip, else the file as it is. */
export function pickEncoding(acceptEncoding: string | undefined): 'br' | 'gzip' | undefined {
  const accepted = new Map<string, number>();
  for (const part of (acceptEncoding ?? '').split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
    accepted.set(name, q === undefined ? 1 : Number(q));
  }
  const weight = (name: string) => accepted.get(name) ?? accepted.get('*') ?? 0;
  if (weight('br') > 0) return 'br';
  if (weight('gzip') > 0) return 'gzip';
  return undefined;
}
