import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from './synth.ts';

const scratch = mkdtempSync(join(tmpdir(), 'rw-cdk-synth-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * Nothing from the caller's environment but PATH: no AWS credentials, config
 * or profile, no instance metadata, and the CLI's and npm's network chatter
 * (version check, telemetry, update notice) off.
 */
const SCRUBBED_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: join(scratch, 'home'),
  AWS_CONFIG_FILE: join(scratch, 'no-aws-config'),
  AWS_SHARED_CREDENTIALS_FILE: join(scratch, 'no-aws-credentials'),
  AWS_EC2_METADATA_DISABLED: 'true',
  CDK_DISABLE_VERSION_CHECK: '1',
  CDK_DISABLE_CLI_TELEMETRY: 'true',
  npm_config_update_notifier: 'false',
};

/**
 * Where user namespaces are allowed (`unshare -rn`), the synth runs in a
 * network namespace with no interface but loopback, so "offline" is enforced
 * rather than assumed; elsewhere it runs with the scrubbed environment only.
 */
const NO_NETWORK = spawnSync('unshare', ['-rn', 'true']).status === 0;

describe('npx cdk synth', () => {
  it(`synthesizes dev from cdk.json without credentials${NO_NETWORK ? ' or network' : ''}, bundling every handler`, () => {
    const out = join(scratch, 'cdk.out');
    const command = ['npx', 'cdk', 'synth', '-c', 'env=dev', '--quiet', '--no-notices', '-o', out];
    const [file, ...args] = NO_NETWORK ? ['unshare', '-rn', ...command] : command;

    const result = spawnSync(file ?? 'npx', args, {
      cwd: REPO,
      env: SCRUBBED_ENV,
      encoding: 'utf8',
      timeout: 280_000,
    });

    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
    const template = JSON.parse(readFileSync(join(out, 'RemoteWorker-dev.template.json'), 'utf8'));
    const functions = Object.values<any>(template.Resources).filter(
      (r) => r.Type === 'AWS::Lambda::Function',
    );
    expect(functions.length).toBeGreaterThan(15);
    for (const fn of functions) {
      const hash = String(fn.Properties.Code.S3Key).replace(/\.zip$/, '');
      const bundle = join(out, `asset.${hash}`, 'index.mjs');
      expect(existsSync(bundle), bundle).toBe(true);
      const code = readFileSync(bundle, 'utf8');
      // ESM exporting the handler, with the banner's CommonJS bridge (infra/bundling.ts ESM_REQUIRE_BANNER,
      // renamed by the regrouping pass of infra/lambda-bundle.ts), and the SDK inside the asset, in no file
      // left to the runtime.
      expect(code).toMatch(/export\s*\{[^}]*\bas handler\b/);
      expect(code).toMatch(/import\s*\{\s*createRequire as [\w$]+\s*\}\s*from\s*"node:module"/);
      for (const file of readdirSync(dirname(bundle), { recursive: true, encoding: 'utf8' })) {
        if (!file.endsWith('.mjs')) continue;
        expect(readFileSync(join(dirname(bundle), file), 'utf8'), file).not.toMatch(/from\s*"@aws-sdk\//);
      }
    }
  }, 300_000);
});
