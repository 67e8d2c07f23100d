import { createHash } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { client, type LocalProcess, newDataDir, startLocal } from '../../test/e2e/harness.ts';
import {
  type Gateway,
  type Loopback,
  startConsoleSite,
  startGateway,
} from '../../test/support/deployed-console.ts';
import { type FakeOidc, startFakeOidc } from '../../test/support/fake-oidc.ts';
import { CONSOLE_DIST, expectAccessible, launch, newPage, pageErrors, screenshot } from './browser.ts';

/**
 * The console as the stack deploys it, signing in with OIDC: its static site
 * (with the stack's CSP and a config.json) on one origin, a loopback OIDC
 * provider on another, and a gateway with the JWT authorizer's checks and the
 * stack's CORS in front of a real local mode on a third
 * (test/support/deployed-console.ts says where those fakes differ).
 */

const CLIENT_ID = 'remote-worker-console';
const AUDIENCE = 'api://remote-worker';
const SCOPES = ['openid', 'remote-worker/runs'];

let local: LocalProcess;
let site: Loopback;
let idp: FakeOidc;
let gateway: Gateway;
let browser: Browser;
/** What config.json names as the bearer; the id_token case needs the client id among the gateway's audiences. */
let bearer: 'access_token' | 'id_token' = 'access_token';

beforeAll(async () => {
  site = await startConsoleSite(CONSOLE_DIST, () => ({
    apiUrl: `${gateway.url}/`,
    oidc: { issuer: idp.issuer, clientId: CLIENT_ID, scopes: SCOPES, bearer },
  }));
  idp = await startFakeOidc({
    clientId: CLIENT_ID,
    redirectUri: `${site.url}/`,
    audience: AUDIENCE,
    allowedOrigin: site.url,
  });
  local = await startLocal(newDataDir());
  gateway = await startGateway({
    issuer: idp.issuer,
    audience: [AUDIENCE, CLIENT_ID],
    scopes: ['remote-worker/runs'],
    jwks: idp.jwks,
    allowedOrigin: site.url,
    upstream: local.url,
    upstreamToken: local.token,
  });
  const put = await client(local.url, local.token)('PUT', '/targets/lab-vm', {
    kind: 'vm',
    cloud: 'local',
    name: 'lab vm',
    address: '127.0.0.1',
    connection: 'local',
  });
  expect(put.status).toBe(201);
  browser = await launch();
}, 60_000);

afterEach(() => {
  idp.tokenLifetimeSeconds = 3600;
  idp.audience = AUDIENCE;
  idp.tamperChallenge = false;
  idp.deny = false;
  bearer = 'access_token';
  gateway.scopes = ['remote-worker/runs'];
});

afterAll(async () => {
  await browser?.close();
  await gateway?.close();
  await local?.stop();
  await idp?.close();
  await site?.close();
});

const signInButton = (page: Page) => page.getByRole('button', { name: /^Sign in with 127\.0\.0\.1:\d+$/ });
const storedToken = (page: Page) => page.evaluate(() => sessionStorage.getItem('remote-worker.token'));
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString());

describe('console: OIDC sign-in (deployed)', () => {
  it('signs in at the issuer with PKCE, state and nonce, and calls the API across origins with the access token', async () => {
    const { context, page } = await newPage(browser, { ignoreHTTPSErrors: true });
    await page.goto(`${site.url}/#/targets`);
    await signInButton(page).waitFor();
    expect(await page.getByLabel('API token').count()).toBe(0);
    await expectAccessible(page, 'oidc sign-in');
    await screenshot(page, 'oidc-sign-in');

    await signInButton(page).click();
    await page.getByRole('heading', { name: 'Targets', level: 1 }).waitFor();
    await page.getByText('lab vm').first().waitFor();

    // What the console sent the provider: a public client's code flow with an S256 challenge.
    const authorize = idp.authorizeRequests.at(-1)?.params ?? {};
    expect(authorize).toMatchObject({
      response_type: 'code',
      client_id: CLIENT_ID,
      redirect_uri: `${site.url}/`,
      scope: SCOPES.join(' '),
      code_challenge_method: 'S256',
    });
    expect(authorize.code_challenge).toMatch(/^[\w-]{43}$/);
    expect(authorize.state?.length).toBeGreaterThanOrEqual(32);
    expect(authorize.nonce?.length).toBeGreaterThanOrEqual(32);
    const exchange = idp.tokenRequests.at(-1);
    expect(exchange?.status).toBe(200);
    expect(exchange?.authorization).toBeUndefined();
    expect(exchange?.params.client_secret).toBeUndefined();
    expect(
      createHash('sha256')
        .update(exchange?.params.code_verifier ?? '')
        .digest('base64url'),
    ).toBe(authorize.code_challenge);

    // The access token (audience: the API) is the bearer, kept in this tab; the code left the address bar.
    const token = await storedToken(page);
    expect(claimsOf(token ?? '')).toMatchObject({ aud: AUDIENCE, iss: idp.issuer, scope: SCOPES.join(' ') });
    expect(page.url()).toBe(`${site.url}/#/targets`);
    expect(gateway.passed).toContain('operator@example.com');
    await screenshot(page, 'oidc-signed-in-targets');
    // A CSP violation (connect-src) or a CORS refusal would be a console error here.
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 90_000);

  it('returns to sign-in with the reason when the token expires', async () => {
    idp.tokenLifetimeSeconds = 5;
    const { context, page } = await newPage(browser, { ignoreHTTPSErrors: true });
    await page.goto(`${site.url}/`);
    await signInButton(page).click();
    await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();

    await signInButton(page).waitFor({ timeout: 15_000 });
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your sign-in expired at');
    expect(await storedToken(page)).toBeNull();
    await screenshot(page, 'oidc-expired');
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 60_000);

  it('returns to sign-in when the API refuses the token (an audience the authorizer does not accept)', async () => {
    idp.audience = 'api://something-else';
    const { context, page } = await newPage(browser, { ignoreHTTPSErrors: true });
    await page.goto(`${site.url}/`);
    await signInButton(page).click();

    await expect.poll(() => page.getByRole('status').textContent()).toContain('The API refused the token');
    await signInButton(page).waitFor();
    expect(await storedToken(page)).toBeNull();
    expect(gateway.refused.some((r) => r.includes('"aud"'))).toBe(true);
    await context.close();
  }, 60_000);

  it('shows the provider’s refusal when the PKCE verifier does not match the challenge, and keeps no token', async () => {
    idp.tamperChallenge = true;
    const { context, page } = await newPage(browser, { ignoreHTTPSErrors: true });
    await page.goto(`${site.url}/`);
    await signInButton(page).click();

    await expect
      .poll(() => page.getByRole('status').textContent())
      .toContain('The identity provider refused the code exchange: PKCE verification failed');
    expect(idp.tokenRequests.at(-1)?.status).toBe(400);
    expect(await storedToken(page)).toBeNull();
    expect(page.url()).toBe(`${site.url}/`);
    await expectAccessible(page, 'oidc sign-in refused');
    await screenshot(page, 'oidc-pkce-refused');
    await context.close();
  }, 60_000);

  it('shows the provider’s refusal of the authorization request, and asks for no token', async () => {
    idp.deny = true;
    const exchanges = idp.tokenRequests.length;
    const { context, page } = await newPage(browser, { ignoreHTTPSErrors: true });
    await page.goto(`${site.url}/`);
    await signInButton(page).click();

    await expect
      .poll(() => page.getByRole('status').textContent())
      .toContain('The identity provider refused the sign-in: operator@example.com may not use this client');
    expect(idp.tokenRequests.length).toBe(exchanges);
    expect(await storedToken(page)).toBeNull();
    expect(page.url()).toBe(`${site.url}/`);
    await context.close();
  }, 60_000);

  it('sends the ID token instead when config.json says bearer: id_token', async () => {
    // An ID token carries no scopes: the stack allows this bearer only with no jwt.scopes (infra/config.ts).
    bearer = 'id_token';
    gateway.scopes = [];
    const { context, page } = await newPage(browser, { ignoreHTTPSErrors: true });
    await page.goto(`${site.url}/#/targets`);
    await signInButton(page).click();
    await page.getByText('lab vm').first().waitFor();

    const token = await storedToken(page);
    const nonce = idp.authorizeRequests.at(-1)?.params.nonce;
    expect(claimsOf(token ?? '')).toMatchObject({ aud: CLIENT_ID, iss: idp.issuer, nonce });
    expect(pageErrors(page)).toEqual([]);
    await context.close();
  }, 60_000);
});
