import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A private certificate authority and a server certificate for 127.0.0.1 and
 * localhost, made with the `openssl` CLI — for loopback fakes of APIs that
 * only speak https (Azure ARM with bearer auth, the Kubernetes API, kubectl).
 * Made once per test process; nothing is written outside a temp dir that is
 * removed at once.
 *
 * @example
 * const tls = testTls();
 * https.createServer({ key: tls.key, cert: tls.cert }, handler);
 * new ContainerInstanceManagementClient(cred, sub, { endpoint, tlsOptions: { ca: tls.ca } });
 */
export interface TestTls {
  /** PEM of the CA certificate: trust this. */
  readonly ca: string;
  /** PEM of the server certificate (SAN 127.0.0.1, ::1, localhost). */
  readonly cert: string;
  /** PEM of the server's private key. */
  readonly key: string;
}

let cached: TestTls | undefined;

export function testTls(): TestTls {
  if (cached !== undefined) return cached;
  const dir = mkdtempSync(join(tmpdir(), 'rw-tls-'));
  try {
    const path = (name: string) => join(dir, name);
    const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      path('ca.key'),
      '-out',
      path('ca.crt'),
      '-days',
      '2',
      '-subj',
      '/CN=remote-worker test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      path('server.key'),
      '-out',
      path('server.csr'),
      '-subj',
      '/CN=127.0.0.1',
    );
    writeFileSync(
      path('server.ext'),
      'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      path('server.csr'),
      '-CA',
      path('ca.crt'),
      '-CAkey',
      path('ca.key'),
      '-CAcreateserial',
      '-out',
      path('server.crt'),
      '-days',
      '2',
      '-extfile',
      path('server.ext'),
    );
    cached = {
      ca: readFileSync(path('ca.crt'), 'utf8'),
      cert: readFileSync(path('server.crt'), 'utf8'),
      key: readFileSync(path('server.key'), 'utf8'),
    };
    return cached;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
