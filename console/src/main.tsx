import { render } from 'preact';
import { configureApi, session } from './api/client.ts';
import { App } from './app.tsx';
import { loadConfig } from './config.ts';
import { finishSignIn, isCallback } from './oidc.ts';
import './styles.css';

/**
 * config.json first (the API's URL and, when deployed, the OIDC issuer), then
 * the issuer's redirect back if this load is one, then the app.
 */
async function start(root: HTMLElement): Promise<void> {
  const config = await loadConfig();
  configureApi(config.apiUrl);
  if (config.oidc !== undefined && isCallback()) {
    try {
      const signedIn = await finishSignIn(config.oidc);
      session.signIn(signedIn.token, signedIn.expiresAt);
    } catch (error) {
      session.signOut(error instanceof Error ? error.message : String(error));
    }
  }
  render(<App {...(config.oidc === undefined ? {} : { oidc: config.oidc })} />, root);
}

const root = document.getElementById('app')!;
start(root).catch((error: unknown) => {
  render(
    <main id="main" class="sign-in">
      <h1>Remote Worker</h1>
      <p role="alert" class="problem">
        The console could not start: {error instanceof Error ? error.message : String(error)}
      </p>
    </main>,
    root,
  );
});
