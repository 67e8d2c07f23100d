import { createHash, type KeyObject, verify } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback fake of the few Cloud Storage JSON API calls GcsAssetStore makes,
 * written from the public JSON API reference (v1):
 *
 * - objects.get (metadata) `GET  /storage/v1/b/{bucket}/o/{object}`
 * - objects.list           `GET  /storage/v1/b/{bucket}/o?prefix&maxResults&pageToken`
 * - objects.insert         `POST /upload/storage/v1/b/{bucket}/o?uploadType=multipart|media&name&ifGenerationMatch`
 * - XML API GET            `GET  /{bucket}/{object}?X-Goog-Algorithm=GOOG4-RSA-SHA256&…` — a V4 signed
 *   read URL (what a task does with the URL `grantRead` hands it), verified against `signer`'s public key:
 *   canonical request, string to sign, expiry and signed host as the V4 signing reference documents them.
 *
 * Every request is recorded before it is answered, so a test can assert that
 * none was sent. Anything else answers 400 `unsupportedByFake`, so a new call
 * fails loudly rather than passing against an invented answer.
 *
 * Where it differs from Cloud Storage is listed in the header of
 * test/integration/gcs-asset-store.test.ts.
 */

export interface RecordedGcsRequest {
  readonly method: string;
  /** The request path, still percent-encoded (object names are one encoded segment). */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

interface StoredObject {
  readonly bytes: Buffer;
  readonly generation: string;
  readonly metageneration: string;
  readonly contentType: string;
  readonly created: Date;
}

export interface FakeGcs {
  /** `http://127.0.0.1:<port>` — the `apiEndpoint` to give `new Storage()`. */
  readonly apiEndpoint: string;
  readonly requests: RecordedGcsRequest[];
  /** Create an (empty) bucket directly, not through the REST API. */
  createBucket(name: string): void;
  /** Store an object directly, bypassing the REST API, to arrange a test. */
  seed(bucket: string, name: string, body: string | Uint8Array): void;
  /** The stored bytes of an object, or undefined. */
  read(bucket: string, name: string): Buffer | undefined;
  close(): Promise<void>;
}

const DEFAULT_MAX_RESULTS = 1000;

export interface FakeGcsOptions {
  /** The public key of the service account that signs V4 URLs; without it, signed URLs are refused. */
  readonly signer?: { readonly clientEmail: string; readonly publicKey: KeyObject };
}

export async function startFakeGcs(options: FakeGcsOptions = {}): Promise<FakeGcs> {
  const buckets = new Map<string, Map<string, StoredObject>>();
  const requests: RecordedGcsRequest[] = [];
  // Generations are microsecond timestamps in GCS; a counter from "now" keeps them unique and increasing.
  let generation = BigInt(Date.now()) * 1000n;

  const objectOf = (bytes: Buffer, contentType: string): StoredObject => {
    generation += 1n;
    return {
      bytes,
      generation: generation.toString(),
      metageneration: '1',
      contentType,
      created: new Date(),
    };
  };

  const resource = (bucket: string, name: string, object: StoredObject) => {
    const encoded = encodeURIComponent(name);
    return {
      kind: 'storage#object',
      id: `${bucket}/${name}/${object.generation}`,
      selfLink: `${apiEndpoint}/storage/v1/b/${bucket}/o/${encoded}`,
      mediaLink: `${apiEndpoint}/download/storage/v1/b/${bucket}/o/${encoded}?generation=${object.generation}&alt=media`,
      name,
      bucket,
      generation: object.generation,
      metageneration: object.metageneration,
      contentType: object.contentType,
      storageClass: 'STANDARD',
      // uint64 fields are JSON strings in the JSON API.
      size: String(object.bytes.byteLength),
      md5Hash: createHash('md5').update(object.bytes).digest('base64'),
      // The SDK checks an upload against these (crc32c by default) and deletes the object on a mismatch.
      crc32c: crc32c(object.bytes),
      etag: Buffer.from(object.generation).toString('base64'),
      timeCreated: object.created.toISOString(),
      updated: object.created.toISOString(),
      timeStorageClassUpdated: object.created.toISOString(),
    };
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks));
      } catch (error) {
        fail(res, 500, 'backendError', String(error));
      }
    });
  });

  function send(res: ServerResponse, status: number, body: unknown): undefined {
    const text = JSON.stringify(body);
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json; charset=UTF-8');
    res.setHeader('Content-Length', Buffer.byteLength(text));
    res.setHeader('X-GUploader-UploadID', 'fake');
    res.end(text);
  }

  // Answering functions are typed `undefined`, not `void`, so `return fail(…)` can end a branch.
  /** The JSON API's error shape: `{ error: { code, message, errors: [{ domain, reason, message }] } }`. */
  function fail(res: ServerResponse, status: number, reason: string, message: string): undefined {
    send(res, status, { error: { code: status, message, errors: [{ message, domain: 'global', reason }] } });
  }

  function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): undefined {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    requests.push({ method: req.method ?? '', path: url.pathname, query, headers: { ...req.headers } });

    if (query['X-Goog-Signature'] !== undefined) return signedRead(req, res, url);
    const read = /^\/storage\/v1\/b\/([^/]+)\/o(?:\/([^/]+))?$/.exec(url.pathname);
    const upload = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(url.pathname);
    const bucketName = decodeURIComponent(read?.[1] ?? upload?.[1] ?? '');
    const objects = buckets.get(bucketName);
    if ((read !== null || upload !== null) && objects === undefined) {
      return fail(res, 404, 'notFound', 'The specified bucket does not exist.');
    }
    if (read !== null && objects !== undefined && req.method === 'GET') {
      if (read[2] === undefined) return listObjects(res, bucketName, objects, query);
      if (query.alt !== undefined && query.alt !== 'json') {
        return fail(res, 400, 'unsupportedByFake', 'media downloads are not faked');
      }
      const name = decodeURIComponent(read[2]);
      const object = objects.get(name);
      if (object === undefined) return fail(res, 404, 'notFound', `No such object: ${bucketName}/${name}`);
      return send(res, 200, resource(bucketName, name, object));
    }
    if (upload !== null && objects !== undefined && req.method === 'POST') {
      return insertObject(req, res, bucketName, objects, query, body);
    }
    return fail(res, 400, 'unsupportedByFake', `${req.method} ${url.pathname}${url.search}`);
  }

  /** A V4 signed GET of `/{bucket}/{object}`: the signature is checked before anything is served. */
  function signedRead(req: IncomingMessage, res: ServerResponse, url: URL): undefined {
    const denied = (why: string) => fail(res, 403, 'SignatureDoesNotMatch', why);
    const signer = options.signer;
    if (signer === undefined) return denied('this fake has no signer key');
    const raw = (req.url ?? '').split('?')[1] ?? '';
    const pairs = raw.split('&').map((p) => {
      const eq = p.indexOf('=');
      return eq < 0 ? [p, ''] : [p.slice(0, eq), p.slice(eq + 1)];
    }) as [string, string][];
    const param = (name: string) => url.searchParams.get(name) ?? '';
    if (param('X-Goog-Algorithm') !== 'GOOG4-RSA-SHA256') return denied('unsupported algorithm');
    const [email, ...scopeParts] = param('X-Goog-Credential').split('/');
    if (email !== signer.clientEmail) return denied(`signed by ${email ?? ''}, not ${signer.clientEmail}`);
    const stamp = param('X-Goog-Date');
    const signedAt = Date.parse(
      stamp.replace(/^(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)Z$/, '$1-$2-$3T$4:$5:$6Z'),
    );
    const expires = Number(param('X-Goog-Expires'));
    if (!Number.isFinite(signedAt) || !Number.isInteger(expires) || expires > 604_800) {
      return denied('bad X-Goog-Date or X-Goog-Expires');
    }
    if (Date.now() > signedAt + expires * 1000) return denied('Request has expired');
    if (param('X-Goog-SignedHeaders') !== 'host') return denied('only the host header may be signed here');
    const canonicalQuery = pairs
      .filter(([k]) => k !== 'X-Goog-Signature')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join('&');
    // The SDK signs the host name without the port (as GCS sees it on 443).
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    const canonicalRequest = [
      req.method ?? '',
      url.pathname,
      canonicalQuery,
      `host:${host}\n`,
      'host',
      'UNSIGNED-PAYLOAD',
    ].join('\n');
    const stringToSign = [
      'GOOG4-RSA-SHA256',
      stamp,
      scopeParts.join('/'),
      createHash('sha256').update(canonicalRequest).digest('hex'),
    ].join('\n');
    const ok = verify(
      'RSA-SHA256',
      Buffer.from(stringToSign),
      signer.publicKey,
      Buffer.from(param('X-Goog-Signature'), 'hex'),
    );
    if (!ok) return denied('The request signature we calculated does not match the signature you provided.');
    if (req.method !== 'GET') return denied(`signed for ${req.method}`);
    const [, bucket = '', ...rest] = url.pathname.split('/');
    const name = rest.map((s) => decodeURIComponent(s)).join('/');
    const object = buckets.get(decodeURIComponent(bucket))?.get(name);
    if (object === undefined) return fail(res, 404, 'notFound', `No such object: ${bucket}/${name}`);
    res.statusCode = 200;
    res.setHeader('Content-Type', object.contentType);
    res.setHeader('Content-Length', object.bytes.byteLength);
    res.end(object.bytes);
    return;
  }

  function insertObject(
    req: IncomingMessage,
    res: ServerResponse,
    bucket: string,
    objects: Map<string, StoredObject>,
    query: Record<string, string>,
    body: Buffer,
  ): undefined {
    let name = query.name;
    let media: Buffer;
    let contentType = 'application/octet-stream';
    if (query.uploadType === 'multipart') {
      const parts = multipartParts(String(req.headers['content-type'] ?? ''), body);
      const [metadataPart, mediaPart] = parts;
      if (parts.length !== 2 || metadataPart === undefined || mediaPart === undefined) {
        return fail(res, 400, 'invalid', 'Multipart upload needs exactly a metadata part and a media part.');
      }
      const metadata = JSON.parse(metadataPart.body.toString('utf8')) as {
        name?: string;
        contentType?: string;
      };
      name = metadata.name ?? name;
      contentType = metadata.contentType ?? mediaPart.contentType ?? contentType;
      media = mediaPart.body;
    } else if (query.uploadType === 'media') {
      media = body;
      contentType = String(req.headers['content-type'] ?? contentType);
    } else {
      return fail(res, 400, 'unsupportedByFake', `uploadType=${query.uploadType ?? ''} is not faked`);
    }
    if (name === undefined || name === '') return fail(res, 400, 'required', 'Required');
    const existing = objects.get(name);
    if (query.ifGenerationMatch !== undefined) {
      // ifGenerationMatch=0: only if no live object exists; otherwise the live generation must match.
      const live = existing?.generation ?? '0';
      if (live !== query.ifGenerationMatch) {
        return fail(
          res,
          412,
          'conditionNotMet',
          'At least one of the pre-conditions you specified did not hold.',
        );
      }
    }
    const stored = objectOf(media, contentType);
    objects.set(name, stored);
    send(res, 200, resource(bucket, name, stored));
  }

  function listObjects(
    res: ServerResponse,
    bucket: string,
    objects: Map<string, StoredObject>,
    query: Record<string, string>,
  ): undefined {
    const prefix = query.prefix ?? '';
    const maxResults = query.maxResults === undefined ? DEFAULT_MAX_RESULTS : Number(query.maxResults);
    if (!Number.isInteger(maxResults) || maxResults < 1) {
      return fail(res, 400, 'invalid', `Invalid value for maxResults: ${query.maxResults ?? ''}`);
    }
    // The page token is opaque to clients; here it is the base64 of the first name of the next page.
    const start =
      query.pageToken === undefined ? '' : Buffer.from(query.pageToken, 'base64url').toString('utf8');
    const names = [...objects.keys()].filter((n) => n.startsWith(prefix) && n >= start).sort();
    const page = names.slice(0, Math.min(maxResults, DEFAULT_MAX_RESULTS));
    const next = names[page.length];
    send(res, 200, {
      kind: 'storage#objects',
      // The API leaves `items` out, rather than sending [], when nothing matches.
      ...(page.length === 0 ? {} : { items: page.map((n) => resource(bucket, n, objects.get(n)!)) }),
      ...(next === undefined ? {} : { nextPageToken: Buffer.from(next).toString('base64url') }),
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const apiEndpoint = `http://127.0.0.1:${port}`;

  return {
    apiEndpoint,
    requests,
    createBucket(name) {
      if (!buckets.has(name)) buckets.set(name, new Map());
    },
    seed(bucket, name, body) {
      const objects = buckets.get(bucket);
      if (objects === undefined) throw new Error(`no bucket ${bucket}`);
      objects.set(name, objectOf(Buffer.from(body), 'application/octet-stream'));
    },
    read(bucket, name) {
      return buckets.get(bucket)?.get(name)?.bytes;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** Split a `multipart/related` body into its parts (headers are read only for Content-Type). */
function multipartParts(
  contentType: string,
  body: Buffer,
): { readonly contentType: string | undefined; readonly body: Buffer }[] {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (boundary === undefined) return [];
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: { contentType: string | undefined; body: Buffer }[] = [];
  let at = body.indexOf(delimiter);
  while (at !== -1) {
    const start = at + delimiter.length;
    if (body.subarray(start, start + 2).toString() === '--') break; // closing delimiter
    const next = body.indexOf(delimiter, start);
    if (next === -1) break;
    const part = body.subarray(start, next);
    const split = part.indexOf('\r\n\r\n');
    const headers = part.subarray(0, split).toString('utf8');
    let content = part.subarray(split + 4);
    // The CRLF before the next delimiter belongs to the delimiter, not the content.
    if (content.subarray(-2).toString() === '\r\n') content = content.subarray(0, -2);
    parts.push({ contentType: /content-type:\s*([^\r\n]+)/i.exec(headers)?.[1], body: content });
    at = next;
  }
  return parts;
}

/** CRC-32C (Castagnoli), big-endian, base64 — the encoding of the JSON API's `crc32c` field. */
function crc32c(bytes: Buffer): string {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  const out = Buffer.alloc(4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return out.toString('base64');
}
