import { cpSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Api,
  client,
  type LocalProcess,
  newDataDir,
  REPO,
  startLocal,
  waitForState as waitForRunState,
} from '../../test/e2e/harness.ts';
import { apiTypes, SCHEMA_FILE } from '../scripts/api-types.ts';
import {
  CONSOLE_DIST,
  expectAccessible,
  launch,
  newPage,
  pageErrors,
  screenshot,
  signIn,
} from './browser.ts';

/**
 * The console in headless Chromium against a real local mode (`bin/local.ts`,
 * the process executor, the real ansible-playbook). The root `npm test`
 * builds the console first; without a build this suite fails rather than
 * skipping, since nothing else would test the console.
 */

let local: LocalProcess;
let api: Api;
let browser: Browser;

const TARGETS = {
  localhost: { kind: 'vm', cloud: 'local', name: 'localhost', address: '127.0.0.1', connection: 'local' },
  // Nothing listens on port 1: ansible fails this host (unreachable) quickly.
  unreachable: {
    kind: 'vm',
    cloud: 'local',
    name: 'unreachable',
    address: '127.0.0.1',
    port: 1,
    connection: 'ssh',
  },
  // ECS is selected for AWS but not configured in this local mode: the runner rules refuse this host.
  'aws-vm': { kind: 'vm', cloud: 'aws', name: 'aws vm', address: '10.0.0.5', connection: 'ssh' },
  desk: { kind: 'virtual_desktop', cloud: 'azure', name: 'seat 12' },
  k3s: { kind: 'cluster', cloud: 'local', name: 'k3s lab', provider: 'k3s' },
} as const;

async function waitForState(page: Page, state: string, timeout = 60_000): Promise<void> {
  await page.getByTestId('run-state').getByText(state, { exact: true }).waitFor({ timeout });
}

beforeAll(async () => {
  if (!existsSync(join(CONSOLE_DIST, 'index.html'))) {
    throw new Error('console/dist is missing: run `npm run build --prefix console` (the root npm test does)');
  }
  // Uploads must not land in the repository's examples: give local mode its own copy of them.
  const storage = mkdtempSync(join(tmpdir(), 'rw-console-assets-'));
  cpSync(join(REPO, 'examples/playbooks'), storage, { recursive: true });
  // ANSIBLE_RUNNER_AWS=ecs with no ECS settings: AWS VMs are refused by the runner rules, at submit.
  local = await startLocal(newDataDir(), { LOCAL_STORAGE_PATH: storage, ANSIBLE_RUNNER_AWS: 'ecs' });
  api = client(local.url, local.token);
  for (const [id, body] of Object.entries(TARGETS)) {
    const put = await api('PUT', `/targets/${id}`, body);
    expect(put.status, JSON.stringify(put.body)).toBe(201);
  }
  browser = await launch();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await local?.stop();
});

// Each test gets at least 60 s: in CI the browser shares two cores with the whole suite, and a first
// page load with its first API calls has taken over 20 s there.
describe('console: sign-in', () => {
  it('refuses a wrong token, and sends a session whose token stops working back to sign-in', async () => {
    const { context, page } = await newPage(browser);
    await page.goto(`${local.url}/`);
    await page.getByLabel('API token').fill('rw_wrong_token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('The API refused this token');
    await screenshot(page, 'sign-in-refused');

    await signIn(page, local.url, local.token);
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
    // The token is kept for this tab only, and never in the URL.
    expect(await page.evaluate(() => sessionStorage.getItem('remote-worker.token'))).toBe(local.token);
    expect(page.url()).not.toContain(local.token);

    // As if the token were rotated under a signed-in tab: the next API call gets 401.
    await page.evaluate(() => sessionStorage.setItem('remote-worker.token', 'rw_expired_token'));
    await page.goto(`${local.url}/#/targets`);
    await page.reload();
    await page.getByLabel('API token').waitFor();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('refused the token');
    expect(await page.evaluate(() => sessionStorage.getItem('remote-worker.token'))).toBeNull();
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 60_000);
});

describe('console: API types', () => {
  // The types are a build product (`npm run generate`, run by the build): this holds the ones the console
  // was built with to the contract the API it talks to serves, so a console typed by another version fails.
  it('were generated from the document GET /openapi.json serves', async () => {
    const res = await fetch(`${local.url}/openapi.json`);
    expect(res.status).toBe(200);
    const served = await apiTypes(await res.text());
    expect(existsSync(SCHEMA_FILE), 'no API types: build the console (the root npm test does)').toBe(true);
    expect(
      readFileSync(SCHEMA_FILE, 'utf8') === served,
      'console/src/api/schema.d.ts differs from the served document: rebuild the console',
    ).toBe(true);
  });
});

describe('console: runs', () => {
  it('submits a run from the form and follows its log to succeeded', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.getByRole('link', { name: 'New run' }).first().click();
    await page.getByLabel('Kind').selectOption('vm');
    // Targets are grouped by cloud; rows of another kind are disabled with the reason.
    await expect
      .poll(() => page.getByRole('group', { name: 'On-premises' }).getByRole('radio').count())
      .toBe(3);
    expect(await page.getByRole('radio', { name: /k3s lab/ }).isDisabled()).toBe(true);
    expect(await page.getByRole('radio', { name: /seat 12/ }).isDisabled()).toBe(true);
    await page.getByRole('radio', { name: /^localhost/ }).check();
    await page.getByRole('radio', { name: /hello\/site\.yml/ }).check();
    await page.getByLabel('Extra vars (YAML or JSON)').fill('greeting: bonjour');
    await screenshot(page, 'new-run');
    await page.getByRole('button', { name: 'Submit run' }).click();

    await page.waitForURL(/#\/runs\/[0-9A-Z]+$/);
    await waitForState(page, 'succeeded');
    const log = page.getByRole('log', { name: 'Run output' });
    await expect.poll(() => log.textContent(), { timeout: 15_000 }).toContain('bonjour from localhost');
    await expect.poll(() => page.getByText(/lines · complete/).count()).toBe(1);
    expect(await log.getAttribute('data-follow')).toBe('true');
    await expect.poll(() => page.getByTestId('exit-code').textContent()).toBe('0');
    await screenshot(page, 'run-succeeded');
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 90_000);

  it('cancels a slow run from its page', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.goto(`${local.url}/#/new`);
    await page.getByRole('radio', { name: /^localhost/ }).check();
    await page.getByRole('radio', { name: /hello\/slow\.yml/ }).check();
    await page.getByLabel('Extra vars (YAML or JSON)').fill('{"seconds": 120}');
    await page.getByRole('button', { name: 'Submit run' }).click();
    await page.waitForURL(/#\/runs\/[0-9A-Z]+$/);
    await waitForState(page, 'running');
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await waitForState(page, 'cancelled', 30_000);
    await expect.poll(() => page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    await page.getByRole('listitem').filter({ hasText: 'cancelled' }).first().first().waitFor();
    await screenshot(page, 'run-cancelled');
    await context.close();
  }, 90_000);

  it('shows a runner refusal with its reason, and the field errors of a rejected body beside their fields', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.goto(`${local.url}/#/new`);
    await page.getByRole('radio', { name: /aws vm/ }).check();
    await page.getByRole('radio', { name: /hello\/site\.yml/ }).check();
    await page.getByRole('button', { name: 'Submit run' }).click();
    const refused = page.getByTestId('refused');
    await refused.waitFor();
    const run = await api('GET', '/runs?state=refused&limit=1');
    expect(run.body.runs[0].reason).toBeTruthy();
    await expect.poll(() => refused.first().textContent()).toContain(run.body.runs[0].reason);
    await screenshot(page, 'new-run-refused');

    // A binding whose variable name the API rejects: 400 with the field error shown on that field.
    await page.getByRole('radio', { name: /^localhost/ }).check();
    await page.getByRole('button', { name: 'Add secret binding' }).click();
    await page.getByLabel('Variable').fill('1bad');
    await page.getByLabel('Secret name').fill('db_password');
    await page.getByRole('button', { name: 'Submit run' }).click();
    const field = page.getByLabel('Variable');
    await expect.poll(() => field.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await field.getAttribute('aria-describedby')) ?? '';
    await expect.poll(() => page.locator(`[id="${describedBy}"]`).textContent()).not.toBe('');
    await page.getByRole('alert').filter({ hasText: 'body.secrets.0.var' }).first().waitFor();
    await screenshot(page, 'new-run-field-errors');
    await context.close();
  }, 60_000);

  it('checks extra vars before submitting and says they are ignored for scripts', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.goto(`${local.url}/#/new`);
    await page.getByRole('radio', { name: /^localhost/ }).check();
    await page.getByRole('radio', { name: /scripts\/disk-report\.sh/ }).check();
    await page.getByText('The selected asset is not a playbook.').first().waitFor();
    await page.getByLabel('Extra vars (YAML or JSON)').fill('- just\n- a list');
    await page
      .getByText(/must be a mapping/)
      .first()
      .waitFor();
    const before = (await api('GET', '/runs?limit=100')).body.runs.length;
    await page.getByRole('button', { name: 'Submit run' }).click();
    await page.getByRole('alert').filter({ hasText: 'Nothing was sent' }).first().waitFor();
    expect((await api('GET', '/runs?limit=100')).body.runs.length).toBe(before);
    await context.close();
  }, 60_000);
});

describe('console: batches', () => {
  it('queues a batch from the inventory, shows the rollup and the refusals, and retries the failed', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.getByRole('link', { name: 'Inventory' }).click();
    expect(await page.getByRole('checkbox', { name: /seat 12/ }).isDisabled()).toBe(true);
    await page.getByRole('checkbox', { name: /^Select localhost/ }).check();
    // One kind per batch: ticking a VM locks the cluster.
    expect(await page.getByRole('checkbox', { name: /k3s lab/ }).isDisabled()).toBe(true);
    await page.getByRole('checkbox', { name: /^Select unreachable/ }).check();
    await page.getByRole('checkbox', { name: /^Select aws vm/ }).check();
    // slow.yml runs a command on the host (site.yml only prints, which needs no connection): unreachable fails.
    await page.getByRole('radio', { name: /hello\/slow\.yml/ }).check();
    await page.getByLabel('Extra vars (YAML or JSON)').fill('seconds: 0');
    await screenshot(page, 'inventory-selected');
    await page.getByRole('button', { name: 'Queue batch (3)' }).click();

    await page.waitForURL(/#\/batches\/[0-9A-Z]+$/);
    const batchId = decodeURIComponent(page.url().split('/batches/')[1] ?? '');
    // The per-target refusal is named as the API gave it, while the rest run.
    await expect
      .poll(() =>
        page
          .getByRole('status')
          .filter({ hasText: 'were refused' })
          .or(page.getByRole('status').filter({ hasText: 'was refused' }))
          .first()
          .textContent(),
      )
      .toContain('aws-vm');
    await page.getByText('complete', { exact: true }).waitFor({ timeout: 90_000 });
    await expect.poll(() => page.locator('[data-count="succeeded"]').textContent()).toBe('1');
    expect(await page.getByRole('button', { name: 'Retry failed (2)' }).isEnabled()).toBe(true);
    await screenshot(page, 'batch-rollup');

    await page.getByRole('button', { name: 'Retry failed (2)' }).click();
    await page.waitForURL((u) => /#\/batches\/[0-9A-Z]+$/.test(u.hash) && !u.hash.endsWith(batchId));
    await page.getByRole('link', { name: batchId }).first().waitFor();
    const retried = decodeURIComponent(page.url().split('/batches/')[1] ?? '');
    const rollup = await api('GET', `/batches/${retried}`);
    expect(rollup.body.retryOf).toBe(batchId);
    expect(rollup.body.runs.map((r: { targetId: string }) => r.targetId).sort()).toEqual([
      'aws-vm',
      'unreachable',
    ]);
    await page.getByText('complete', { exact: true }).waitFor({ timeout: 90_000 });
    await screenshot(page, 'batch-retry');
    await context.close();
  }, 240_000);

  it('shows a whole-request refusal with every offending target', async () => {
    await api('PUT', '/targets/doomed', {
      kind: 'vm',
      cloud: 'local',
      name: 'doomed',
      address: '127.0.0.1',
      connection: 'local',
    });
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.goto(`${local.url}/#/inventory`);
    await page.getByRole('checkbox', { name: /^Select localhost/ }).check();
    await page.getByRole('checkbox', { name: /^Select doomed/ }).check();
    await page.getByRole('radio', { name: /hello\/site\.yml/ }).check();
    // The registry changes under the open page: only the API can refuse this selection now.
    expect((await api('DELETE', '/targets/doomed')).status).toBe(204);
    await page.getByRole('button', { name: 'Queue batch (2)' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The batch was refused' });
    await alert.first().waitFor();
    await expect
      .poll(() => alert.getByRole('list', { name: 'Refused targets' }).first().textContent())
      .toContain('doomed');
    await expect.poll(() => page.locator('tr.refused-row').first().textContent()).toContain('doomed');
    await screenshot(page, 'inventory-refused');
    await context.close();
  }, 60_000);
});

describe('console: assets', () => {
  it('uploads a script, lists it with its badge and runs it', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.getByRole('link', { name: 'Assets' }).click();
    await page.getByLabel('File').setInputFiles({
      name: 'console-upload.sh',
      mimeType: 'text/x-shellscript',
      buffer: Buffer.from('#!/bin/bash\necho "uploaded by the console"\n'),
    });
    await page.getByLabel('Path in storage').fill('console/console-upload.sh');
    await page.getByRole('button', { name: 'Upload' }).click();
    await page.getByRole('status').filter({ hasText: 'Uploaded' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'console/console-upload.sh' });
    await row.getByText('Script', { exact: true }).first().waitFor();
    await screenshot(page, 'assets');

    // The same path again without "replace": the API's 409 detail is shown.
    await page.getByLabel('Path in storage').fill('console/console-upload.sh');
    await page.getByRole('button', { name: 'Upload' }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('already exists');

    await page
      .getByRole('link', { name: 'Run it' })
      .or(page.getByRole('link', { name: 'Run console/console-upload.sh' }))
      .first()
      .click();
    expect(await page.getByRole('radio', { name: /console\/console-upload\.sh/ }).isChecked()).toBe(true);
    await page.getByRole('radio', { name: /^localhost/ }).check();
    await page.getByRole('button', { name: 'Submit run' }).click();
    await page.waitForURL(/#\/runs\/[0-9A-Z]+$/);
    await waitForState(page, 'succeeded');
    await expect
      .poll(() => page.getByRole('log').textContent(), { timeout: 15_000 })
      .toContain('uploaded by the console');
    await context.close();
  }, 90_000);
});

describe('console: targets', () => {
  it('registers a target from the form, shows a refused field beside it, saves an edit and deletes it', async () => {
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await page.getByRole('link', { name: 'Targets' }).click();
    await page.getByLabel('Id', { exact: true }).fill('console-vm');
    await page.getByLabel('Name', { exact: true }).fill('console vm');
    await page.getByLabel('Address', { exact: true }).fill('10.0.0.9');
    // Above 65535: the API's 400 names body.port, and its message stands under that field.
    await page.getByLabel('Port', { exact: true }).fill('70000');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('alert').filter({ hasText: 'body.port' }).first().waitFor();
    await expect.poll(() => page.locator('#t-port-error').textContent()).not.toBe('');
    expect((await api('GET', '/targets/console-vm')).status).toBe(404);

    await page.getByLabel('Port', { exact: true }).fill('2222');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('status').filter({ hasText: 'Registered console-vm' }).waitFor();
    expect(await page.getByRole('alert').count()).toBe(0);
    const row = page.getByRole('row').filter({ hasText: 'console-vm' });
    await row.waitFor();

    await row.getByRole('button', { name: 'Edit console-vm' }).click();
    await page.getByLabel('Name', { exact: true }).fill('console vm, renamed');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved console-vm' }).waitFor();
    expect((await api('GET', '/targets/console-vm')).body.name).toBe('console vm, renamed');

    // A deletion answers 204 with no body: the page says it is done rather than showing a problem.
    await row.getByRole('button', { name: 'Delete console-vm' }).click();
    await row.getByRole('button', { name: 'Confirm delete' }).click();
    await page.getByRole('status').filter({ hasText: 'Deleted console-vm' }).waitFor();
    await expect.poll(() => row.count()).toBe(0);
    expect(await page.getByRole('alert').count()).toBe(0);
    expect((await api('GET', '/targets/console-vm')).status).toBe(404);
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 60_000);
});

describe('console: accessibility and layout', () => {
  it('has no serious or critical axe violation on any page, light and dark, wide and narrow', async () => {
    const runs = await api('GET', '/runs?state=succeeded&limit=1');
    const batch = (await api('GET', '/runs?limit=100')).body.runs.find(
      (r: { batchId?: string }) => r.batchId,
    )?.batchId;
    expect(batch).toBeTruthy();
    const pages: Record<string, string> = {
      runs: '#/runs',
      'run-detail': `#/runs/${runs.body.runs[0].id}`,
      'new-run': '#/new',
      inventory: '#/inventory',
      targets: '#/targets',
      assets: '#/assets',
      batch: `#/batches/${batch}`,
    };
    for (const scheme of ['light', 'dark'] as const) {
      for (const width of [1280, 390]) {
        const { context, page } = await newPage(browser, { colorScheme: scheme, width });
        await page.goto(`${local.url}/`);
        await expectAccessible(page, `sign-in ${scheme} ${width}`);
        await screenshot(page, `sign-in-${scheme}-${width}`);
        await signIn(page, local.url, local.token);
        for (const [name, hash] of Object.entries(pages)) {
          await page.goto(`${local.url}/${hash}`);
          await page.locator('main h1').first().waitFor();
          await page.waitForLoadState('networkidle');
          if (name === 'inventory') await page.getByRole('checkbox', { name: /^Select localhost/ }).check();
          await expectAccessible(page, `${name} ${scheme} ${width}`);
          await screenshot(page, `${name}-${scheme}-${width}`);
          // Narrow screens: the page itself never scrolls sideways (tables scroll in their own region).
          const overflow = await page.evaluate(
            () => document.documentElement.scrollWidth - window.innerWidth,
          );
          expect(overflow, `${name} ${scheme} ${width} scrolls sideways`).toBeLessThanOrEqual(0);
        }
        expect(pageErrors(page)).toEqual([]);
        await context.close();
      }
    }
  }, 180_000);

  it('can be driven by the keyboard alone: sign in, move through the nav, open a run', async () => {
    const { context, page } = await newPage(browser);
    await page.goto(`${local.url}/`);
    // The app renders once config.json has answered (local mode has none), a moment after the load event.
    await page.getByLabel('API token').waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.type(local.token);
    await page.keyboard.press('Enter');
    await page.getByRole('navigation', { name: 'Main' }).waitFor();
    // Skip link first, then the nav.
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('New run');
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/new$/);
    await page.getByRole('heading', { name: 'New run' }).waitFor();
    await context.close();
  }, 60_000);
});

/**
 * Records the longest main-thread task (over 50 ms; shorter ones are not
 * reported) in every document the page loads from now on, and reloads so the
 * current one is watched too: a navigation cannot silently drop the watch.
 */
async function watchLongTasks(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { longest: number };
    w.longest = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) w.longest = Math.max(w.longest, entry.duration);
    }).observe({ type: 'longtask', buffered: true });
  }, 60_000);
  await page.reload();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
  expect(await page.evaluate(() => typeof (window as unknown as { longest?: number }).longest)).toBe(
    'number',
  );
}

describe('console: performance', () => {
  it('stays responsive with 1,000 runs loaded', async () => {
    // Refused runs are recorded at submit and never execute: a cheap way to fill the list.
    const existing = (await api('GET', '/runs?limit=100')).body.runs.length;
    for (let i = existing; i < 1000; i++) {
      const res = await api('POST', '/runs', { kind: 'vm', targetId: 'aws-vm', asset: 'hello/site.yml' });
      expect(res.status).toBe(200);
    }
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    await watchLongTasks(page);
    const started = Date.now();
    // The first page before asking for more: until it arrives the list's foot has no "Load more" button.
    await page.getByText(/\d+ runs shown/).waitFor();
    while ((await page.getByRole('button', { name: 'Load more' }).count()) > 0) {
      await page.getByRole('button', { name: 'Load more' }).click();
      await page
        .getByRole('button', { name: 'Load more' })
        .or(page.getByText(/\d+ runs shown/))
        .first()
        .waitFor();
      await page.waitForFunction(() => !document.querySelector('.list-foot button[disabled]'));
    }
    const loadedMs = Date.now() - started;
    await expect.poll(() => page.locator('table.runs tbody tr').count()).toBeGreaterThanOrEqual(1000);
    // Fixed layout: each column but Asset keeps its width (in rem), whatever its rows hold.
    const rem = await page.evaluate(() =>
      Number.parseFloat(getComputedStyle(document.documentElement).fontSize),
    );
    const widths = await page
      .locator('table.runs thead th')
      .evaluateAll((ths) => ths.map((th) => th.getBoundingClientRect().width));
    expect(widths.map((w) => Math.round(w / rem))).toEqual([17, 7, 8, 9, expect.any(Number), 11, 6]);
    // A refresh of the first page merges into 1,000 rows: typing in a filter must not lag behind it.
    const typed = Date.now();
    await page.getByLabel('Batch id').pressSequentially('abcdefgh');
    const typingMs = Date.now() - typed;
    const longest = await page.evaluate(() => (window as unknown as { longest: number }).longest);
    process.stdout.write(
      `runs page: 1,000 rows in ${loadedMs} ms; 8 keystrokes in ${typingMs} ms; longest task ${longest.toFixed(0)} ms\n`,
    );
    // Generous for a shared, loaded CI host; a non-memoised 1,000-row render measured 690 ms here.
    expect(longest).toBeLessThan(500);
    await screenshot(page, 'runs-1000');
    await context.close();
  }, 180_000);

  it('renders a 50 MB log in a window without freezing the page, and keeps its place when scrolled up', async () => {
    // Its own run, so this test does not lean on the others having left one; the log is stubbed below.
    const submitted = await api('POST', '/runs', {
      kind: 'vm',
      targetId: 'localhost',
      asset: 'hello/site.yml',
    });
    const run = await waitForRunState(api, submitted.body.id, ['succeeded']);
    const { context, page } = await newPage(browser);
    await signIn(page, local.url, local.token);
    // The log API stubbed with 500,000 lines of 100 bytes (50 MB) in pages of 5,000; the run itself is real.
    const LINES = 500_000;
    const PAGE = 5_000;
    const text = (seq: number) => `line ${String(seq).padStart(7, '0')} ${'x'.repeat(87)}`;
    await page.route(`**/runs/${run.id}/logs*`, (route) => {
      const from = Number(new URL(route.request().url()).searchParams.get('cursor') ?? 0);
      const to = Math.min(LINES, from + PAGE);
      const lines = [];
      for (let seq = from; seq < to; seq++)
        lines.push({ seq, at: run.createdAt, stream: 'stdout', text: text(seq) });
      return route.fulfill({
        contentType: 'application/json',
        body: JSON.stringify({
          runId: run.id,
          state: 'succeeded',
          complete: to >= LINES,
          lines,
          nextCursor: String(to),
        }),
      });
    });
    await watchLongTasks(page);
    const started = Date.now();
    await page.goto(`${local.url}/#/runs/${run.id}`);
    await page.getByText('500000 lines · complete').waitFor({ timeout: 120_000 });
    const loadedMs = Date.now() - started;
    const rendered = await page.locator('.log-line').count();
    expect(rendered).toBeLessThan(200);
    const log = page.getByRole('log', { name: 'Run output' });
    await expect.poll(() => log.textContent()).toContain(text(LINES - 1));

    // Scrolled to the middle: that window renders, and the view stays there.
    await log.evaluate((el) => {
      el.scrollTop = el.scrollHeight / 2;
    });
    await expect.poll(() => log.textContent()).toContain('line 0250000');
    expect(await log.getAttribute('data-follow')).toBe('false');
    await page.getByRole('button', { name: 'Follow latest' }).waitFor();
    const longest = await page.evaluate(() => (window as unknown as { longest: number }).longest);
    process.stdout.write(
      `log: 50 MB (500,000 lines) in ${loadedMs} ms, ${rendered} rows in the DOM, longest task ${longest.toFixed(0)} ms\n`,
    );
    expect(longest).toBeLessThan(500);
    await screenshot(page, 'log-50mb');
    await context.close();
  }, 180_000);
});
