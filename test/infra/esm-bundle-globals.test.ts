import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildLambdaBundle } from '../../infra/lambda-bundle.ts';

/*
 * CommonJS modules bundled into a Lambda's ES module that read Node's module
 * globals at load: google-gax (under the Cloud Run launcher and GCE discovery)
 * reads `__dirname`, the AWS and Azure SDKs `require` built-ins. Built as the
 * stack builds its assets (infra/lambda-bundle.ts: esbuild, then rolldown's
 * regrouping) and run as Lambda runs it: plain node, no loader.
 */
const REPO = resolve(import.meta.dirname, '../..');
mkdirSync(join(REPO, 'dist'), { recursive: true });
const scratch = mkdtempSync(join(REPO, 'dist', 'esm-globals-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const credentials = { client_email: 'smoke@example.iam.gserviceaccount.com', private_key: 'not-a-key' };

describe('Lambda ESM bundles and CommonJS module globals', () => {
  it('load and construct the Google clients (google-gax reads __dirname) with the stack’s build options', async () => {
    const entry = join(scratch, 'google.ts');
    writeFileSync(
      entry,
      [
        "import { JobsClient } from '@google-cloud/run/build/src/v2/jobs_client.js';",
        "import { InstancesClient } from '@google-cloud/compute/build/src/v1/instances_client.js';",
        `const credentials = ${JSON.stringify(credentials)};`,
        'const jobs = new JobsClient({ credentials });',
        'const instances = new InstancesClient({ credentials });',
        'await jobs.initialize();',
        'console.log(JSON.stringify({ runJob: typeof jobs.runJob, list: typeof instances.aggregatedListAsync }));',
      ].join('\n'),
    );
    const out = join(scratch, 'google', 'index.mjs');
    await buildLambdaBundle(entry, out, { controlsTasks: true, discoversVms: true }, { absWorkingDir: REPO });

    const printed = execFileSync(process.execPath, [out], { encoding: 'utf8', timeout: 60_000 });

    expect(JSON.parse(printed.trim().split('\n').at(-1) ?? '{}')).toEqual({
      runJob: 'function',
      list: 'function',
    });
  }, 120_000);

  it('keeps a module’s own __dirname (the define replaces only free uses)', async () => {
    const entry = join(scratch, 'own.ts');
    writeFileSync(
      entry,
      [
        "import { BlobServiceClient } from '@azure/storage-blob';",
        "const client = BlobServiceClient.fromConnectionString('DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/devstoreaccount1');",
        'console.log(JSON.stringify({ url: client.url, here: typeof __dirname }));',
      ].join('\n'),
    );
    const out = join(scratch, 'own', 'index.mjs');
    await buildLambdaBundle(entry, out, { controlsTasks: true }, { absWorkingDir: REPO });

    const printed = execFileSync(process.execPath, [out], { encoding: 'utf8', timeout: 60_000 });

    expect(JSON.parse(printed.trim().split('\n').at(-1) ?? '{}')).toEqual({
      url: 'http://127.0.0.1:1/devstoreaccount1',
      here: 'string',
    });
  }, 120_000);
});
