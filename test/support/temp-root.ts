/**
 * Vitest global setup: every temporary file of a test run under one directory of its own, removed when the
 * run ends. Tests make their scratch dirs with mkdtemp under os.tmpdir(), and the tools they start (Ansible,
 * the CDK's cdk.out, podman builds) honour TMPDIR too; a test that fails or is killed midway used to leave its
 * dirs behind, and a few hundred were left in /tmp by every run of the suite. Set before the workers start,
 * so they and everything they spawn inherit it; a short name, so Unix socket paths under it stay short.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'rwt-'));
  // As /tmp is: other users the tests run tools as (postgres for initdb) must reach their dirs in it.
  chmodSync(root, 0o1777);
  const before = process.env.TMPDIR;
  process.env.TMPDIR = root;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  };
}
