import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback fake of the few Azure Blob Storage REST calls AzureBlobAssetStore
 * makes, written from the public REST reference (x-ms-version 2025-x):
 *
 * - Put Blob        `PUT  /{account}/{container}/{blob}` (BlockBlob; `If-None-Match: *`, `If-Match`)
 * - Get Blob Properties `HEAD /{account}/{container}/{blob}`
 * - Get Blob        `GET  /{account}/{container}/{blob}?<service SAS>` — read with a SAS only
 *   (what a task does with the URL `grantRead` hands it); the SAS signature is
 *   verified with the account key, its expiry, start, protocol, resource and
 *   read permission checked.
 * - List Blobs      `GET  /{account}/{container}?restype=container&comp=list&prefix&marker&maxresults`
 *
 * Paths are in the emulator ("path-style") form the SDK uses for an IP host:
 * the account name is the first path segment. Every request is recorded
 * before it is answered, so a test can assert that none was sent. Anything
 * else answers 400 `UnsupportedByFake`, so a new call fails loudly rather
 * than passing against an invented answer.
 *
 * Where it differs from Azure is listed in the header of
 * test/integration/azure-blob-asset-store.test.ts.
 */

export const FAKE_AZURE_ACCOUNT = 'devstoreaccount1';
/** Azurite's published development key: public; the fake checks SAS signatures with it (not SharedKey ones). */
export const FAKE_AZURE_ACCOUNT_KEY =
  'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface RecordedBlobRequest {
  readonly method: string;
  /** Decoded path after the account: `/{container}` or `/{container}/{blob}`. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

interface StoredBlob {
  readonly bytes: Buffer;
  readonly etag: string;
  readonly lastModified: Date;
  readonly contentType: string;
}

export interface FakeAzureBlob {
  /** `http://127.0.0.1:<port>/devstoreaccount1` — the account URL to give BlobServiceClient. */
  readonly accountUrl: string;
  readonly requests: RecordedBlobRequest[];
  /** Create a container (empty) — done directly, not through the REST API. */
  createContainer(name: string): void;
  /** Store a blob directly, bypassing the REST API, to arrange a test. */
  seed(container: string, name: string, body: string | Uint8Array): void;
  /** The stored bytes of a blob, or undefined. */
  read(container: string, name: string): Buffer | undefined;
  close(): Promise<void>;
}

const xmlEscape = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const DEFAULT_MAX_RESULTS = 5000;

export async function startFakeAzureBlob(): Promise<FakeAzureBlob> {
  const containers = new Map<string, Map<string, StoredBlob>>();
  const requests: RecordedBlobRequest[] = [];
  let sequence = 0;

  const blobOf = (bytes: Buffer, contentType: string): StoredBlob => {
    sequence += 1;
    // Azure ETags look like "0x8DC…" (quoted hex); the fake keeps them unique per write.
    return {
      bytes,
      etag: `"0x8DC${sequence.toString(16).toUpperCase().padStart(11, '0')}"`,
      lastModified: new Date(),
      contentType,
    };
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        handle(req, res, Buffer.concat(chunks));
      } catch (error) {
        fail(res, 500, 'InternalError', String(error));
      }
    });
  });

  function commonHeaders(res: ServerResponse): void {
    res.setHeader('x-ms-request-id', randomUUID());
    res.setHeader('x-ms-version', '2025-11-05');
    res.setHeader('Date', new Date().toUTCString());
    res.setHeader('Server', 'fake-azure-blob');
  }

  // Answering functions are typed `undefined`, not `void`, so `return fail(…)` can end a branch.
  /** Azure errors: the code in `x-ms-error-code`, and (except for HEAD) an XML body. */
  function fail(res: ServerResponse, status: number, code: string, message: string, head = false): undefined {
    commonHeaders(res);
    res.statusCode = status;
    res.setHeader('x-ms-error-code', code);
    if (head) {
      res.end();
      return;
    }
    const body = `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${xmlEscape(
      `${message}\nRequestId:${randomUUID()}\nTime:${new Date().toISOString()}`,
    )}</Message></Error>`;
    res.setHeader('Content-Type', 'application/xml');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  }

  function handle(req: IncomingMessage, res: ServerResponse, body: Buffer): undefined {
    const url = new URL(req.url ?? '/', 'http://fake');
    const segments = url.pathname.split('/').slice(1);
    const account = segments.shift();
    const container = decodeURIComponent(segments.shift() ?? '');
    const blobName = segments.map((s) => decodeURIComponent(s)).join('/');
    const query = Object.fromEntries(url.searchParams);
    requests.push({
      method: req.method ?? '',
      path: `/${container}${blobName === '' ? '' : `/${blobName}`}`,
      query,
      headers: { ...req.headers },
    });
    const head = req.method === 'HEAD';

    if (account !== FAKE_AZURE_ACCOUNT) {
      return fail(res, 400, 'InvalidUri', `Unknown account ${account ?? ''}`, head);
    }
    if (query.sig !== undefined) return readWithSas(req, res, container, blobName, query);
    // The SDK signs with SharedKey; the fake checks the scheme and account, not the HMAC.
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith(`SharedKey ${FAKE_AZURE_ACCOUNT}:`)) {
      return fail(res, 403, 'AuthenticationFailed', 'Server failed to authenticate the request.', head);
    }
    const blobs = containers.get(container);
    if (blobs === undefined) {
      return fail(res, 404, 'ContainerNotFound', 'The specified container does not exist.', head);
    }

    if (blobName === '' && req.method === 'GET' && query.restype === 'container' && query.comp === 'list') {
      return listBlobs(res, container, blobs, query);
    }
    if (blobName !== '' && req.method === 'HEAD') {
      const blob = blobs.get(blobName);
      if (blob === undefined)
        return fail(res, 404, 'BlobNotFound', 'The specified blob does not exist.', true);
      commonHeaders(res);
      res.statusCode = 200;
      res.setHeader('Content-Length', blob.bytes.byteLength);
      res.setHeader('Content-Type', blob.contentType);
      res.setHeader('ETag', blob.etag);
      res.setHeader('Last-Modified', blob.lastModified.toUTCString());
      res.setHeader('x-ms-blob-type', 'BlockBlob');
      res.setHeader('x-ms-creation-time', blob.lastModified.toUTCString());
      res.setHeader('x-ms-server-encrypted', 'true');
      res.setHeader('x-ms-access-tier', 'Hot');
      res.setHeader('x-ms-access-tier-inferred', 'true');
      res.setHeader('x-ms-lease-state', 'available');
      res.setHeader('x-ms-lease-status', 'unlocked');
      res.end();
      return;
    }
    if (blobName !== '' && req.method === 'PUT' && Object.keys(query).length === 0) {
      return putBlob(req, res, blobs, blobName, body);
    }
    return fail(res, 400, 'UnsupportedByFake', `${req.method} ${url.pathname}${url.search}`, head);
  }

  /**
   * Get Blob with a service SAS (version 2020-12-06 and later): the signature is
   * HMAC-SHA256 with the account key over the documented string-to-sign — the
   * signed fields in order, the canonical resource `/blob/<account>/<container>/<blob>`.
   */
  function readWithSas(
    req: IncomingMessage,
    res: ServerResponse,
    container: string,
    blobName: string,
    query: Record<string, string>,
  ): undefined {
    const head = req.method === 'HEAD';
    const denied = (why: string) => fail(res, 403, 'AuthenticationFailed', why, head);
    const q = (name: string) => query[name] ?? '';
    const stringToSign = [
      q('sp'),
      q('st'),
      q('se'),
      `/blob/${FAKE_AZURE_ACCOUNT}/${container}/${blobName}`,
      q('si'),
      q('sip'),
      q('spr'),
      q('sv'),
      q('sr'),
      '', // snapshot time
      q('ses'),
      q('rscc'),
      q('rscd'),
      q('rsce'),
      q('rscl'),
      q('rsct'),
    ].join('\n');
    const expected = createHmac('sha256', Buffer.from(FAKE_AZURE_ACCOUNT_KEY, 'base64'))
      .update(stringToSign, 'utf8')
      .digest();
    const given = Buffer.from(q('sig'), 'base64');
    if (q('sv') < '2020-12-06') return denied(`SAS version ${q('sv')} is not modelled`);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      return denied('Signature did not match.');
    }
    const now = Date.now();
    if (q('se') === '' || Date.parse(q('se')) <= now) return denied('Signed expiry time has passed.');
    if (q('st') !== '' && Date.parse(q('st')) > now) return denied('Signed start time is in the future.');
    if (q('sr') !== 'b') return denied('This SAS is not for a blob.');
    if (!q('sp').includes('r')) return denied('This SAS does not grant read.');
    if (q('spr') === 'https') return denied('This SAS allows https only; the fake serves http.');
    if (req.method !== 'GET' && !head) return denied(`A read SAS does not allow ${req.method}.`);
    const blob = containers.get(container)?.get(blobName);
    if (blob === undefined) return fail(res, 404, 'BlobNotFound', 'The specified blob does not exist.', head);
    commonHeaders(res);
    res.statusCode = 200;
    res.setHeader('Content-Length', blob.bytes.byteLength);
    res.setHeader('Content-Type', blob.contentType);
    res.setHeader('ETag', blob.etag);
    res.setHeader('x-ms-blob-type', 'BlockBlob');
    res.end(head ? undefined : blob.bytes);
    return;
  }

  function putBlob(
    req: IncomingMessage,
    res: ServerResponse,
    blobs: Map<string, StoredBlob>,
    name: string,
    body: Buffer,
  ): undefined {
    if (req.headers['x-ms-blob-type'] !== 'BlockBlob') {
      return fail(res, 400, 'UnsupportedByFake', 'only BlockBlob uploads are faked');
    }
    const existing = blobs.get(name);
    const ifNoneMatch = req.headers['if-none-match'];
    const ifMatch = req.headers['if-match'];
    // Put Blob with `If-None-Match: *` on an existing blob answers 409 BlobAlreadyExists;
    // other failed preconditions answer 412 ConditionNotMet.
    if (ifNoneMatch === '*' && existing !== undefined) {
      return fail(res, 409, 'BlobAlreadyExists', 'The specified blob already exists.');
    }
    if (ifNoneMatch !== undefined && ifNoneMatch !== '*' && existing?.etag === ifNoneMatch) {
      return fail(
        res,
        412,
        'ConditionNotMet',
        'The condition specified using HTTP conditional header(s) is not met.',
      );
    }
    if (ifMatch !== undefined && (existing === undefined || (ifMatch !== '*' && existing.etag !== ifMatch))) {
      return fail(
        res,
        412,
        'ConditionNotMet',
        'The condition specified using HTTP conditional header(s) is not met.',
      );
    }
    const contentType = req.headers['x-ms-blob-content-type'];
    const stored = blobOf(body, typeof contentType === 'string' ? contentType : 'application/octet-stream');
    blobs.set(name, stored);
    commonHeaders(res);
    res.statusCode = 201;
    res.setHeader('ETag', stored.etag);
    res.setHeader('Last-Modified', stored.lastModified.toUTCString());
    res.setHeader('Content-MD5', createHash('md5').update(body).digest('base64'));
    res.setHeader('x-ms-request-server-encrypted', 'true');
    res.setHeader('Content-Length', 0);
    res.end();
  }

  function listBlobs(
    res: ServerResponse,
    container: string,
    blobs: Map<string, StoredBlob>,
    query: Record<string, string>,
  ): undefined {
    const prefix = query.prefix ?? '';
    const maxResults = query.maxresults === undefined ? DEFAULT_MAX_RESULTS : Number(query.maxresults);
    if (!Number.isInteger(maxResults) || maxResults < 1) {
      return fail(res, 400, 'OutOfRangeQueryParameterValue', 'maxresults is out of range');
    }
    // The marker is opaque to clients; here it is the base64 of the first name of the next page.
    const start = query.marker === undefined ? '' : Buffer.from(query.marker, 'base64url').toString('utf8');
    const names = [...blobs.keys()].filter((n) => n.startsWith(prefix) && n >= start).sort();
    const page = names.slice(0, maxResults);
    const next = names[maxResults];
    const items = page
      .map((name) => {
        const blob = blobs.get(name)!;
        return (
          `<Blob><Name>${xmlEscape(name)}</Name><Properties>` +
          `<Creation-Time>${blob.lastModified.toUTCString()}</Creation-Time>` +
          `<Last-Modified>${blob.lastModified.toUTCString()}</Last-Modified>` +
          `<Etag>${blob.etag}</Etag>` +
          `<Content-Length>${blob.bytes.byteLength}</Content-Length>` +
          `<Content-Type>${xmlEscape(blob.contentType)}</Content-Type>` +
          '<BlobType>BlockBlob</BlobType><AccessTier>Hot</AccessTier><AccessTierInferred>true</AccessTierInferred>' +
          '<LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState>' +
          '<ServerEncrypted>true</ServerEncrypted></Properties></Blob>'
        );
      })
      .join('');
    const body =
      '<?xml version="1.0" encoding="utf-8"?>' +
      `<EnumerationResults ServiceEndpoint="${xmlEscape(accountUrl)}/" ContainerName="${xmlEscape(container)}">` +
      (query.prefix === undefined ? '' : `<Prefix>${xmlEscape(prefix)}</Prefix>`) +
      (query.marker === undefined ? '' : `<Marker>${xmlEscape(query.marker)}</Marker>`) +
      (query.maxresults === undefined ? '' : `<MaxResults>${maxResults}</MaxResults>`) +
      `<Blobs>${items}</Blobs>` +
      // Azure sends an empty NextMarker on the last page.
      (next === undefined
        ? '<NextMarker />'
        : `<NextMarker>${Buffer.from(next).toString('base64url')}</NextMarker>`) +
      '</EnumerationResults>';
    commonHeaders(res);
    res.statusCode = 200;
    res.setHeader('Content-Type', 'application/xml');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const accountUrl = `http://127.0.0.1:${port}/${FAKE_AZURE_ACCOUNT}`;

  return {
    accountUrl,
    requests,
    createContainer(name) {
      if (!containers.has(name)) containers.set(name, new Map());
    },
    seed(container, name, body) {
      const blobs = containers.get(container);
      if (blobs === undefined) throw new Error(`no container ${container}`);
      blobs.set(name, blobOf(Buffer.from(body), 'application/octet-stream'));
    },
    read(container, name) {
      return containers.get(container)?.get(name)?.bytes;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
