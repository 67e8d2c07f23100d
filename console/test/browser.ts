import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import axe from 'axe-core';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Screenshots land here; the folder is gitignored. */
export const OUTPUT = resolve(import.meta.dirname, '../test-output');
export const CONSOLE_DIST = resolve(import.meta.dirname, '../dist');

/**
 * Debian's chromium (no browser download). Root in a container has no user
 * namespace sandbox and a small /dev/shm, hence the flags.
 */
export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

export async function newPage(
  browser: Browser,
  options: { colorScheme?: 'light' | 'dark'; width?: number; ignoreHTTPSErrors?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({
    colorScheme: options.colorScheme ?? 'light',
    viewport: { width: options.width ?? 1280, height: 900 },
    // Only for the loopback OIDC provider's private-CA certificate (test/support/fake-oidc.ts).
    ignoreHTTPSErrors: options.ignoreHTTPSErrors ?? false,
  });
  const page = await context.newPage();
  // A wait that cannot succeed fails naming what it waited for, well inside the test's own timeout.
  page.setDefaultTimeout(20_000);
  // A console error (a CSP violation, an uncaught exception) fails the test that caused it.
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 4\d\d/.test(m.text())) errors.push(m.text());
  });
  (page as Page & { errors: string[] }).errors = errors;
  return { context, page };
}

export const pageErrors = (page: Page): string[] => (page as Page & { errors?: string[] }).errors ?? [];

export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(join(OUTPUT, 'screenshots'), { recursive: true });
  await page.screenshot({ path: join(OUTPUT, 'screenshots', `${name}.png`), fullPage: true });
}

/** axe-core injected into the page; serious and critical violations fail, with what and where. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  // Evaluated through the DevTools protocol: the console's CSP rightly refuses an injected inline script.
  await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: typeof axe }).axe.run(document, {
      resultTypes: ['violations'],
    });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
  expect(violations, `axe on ${name}`).toEqual([]);
}
