import { useState } from 'preact/hooks';
import { api, type Problem, session } from '../api/client.ts';
import { ProblemView } from '../components/problem.tsx';
import type { OidcConfig } from '../config.ts';
import { useAction } from '../hooks.ts';
import { startSignIn } from '../oidc.ts';

/**
 * A deployed console: sign-in happens at the OIDC issuer (authorization code
 * with PKCE), which sends the tab back here with a code.
 */
function OidcSignIn({ reason, oidc }: { reason?: string; oidc: OidcConfig }) {
  const [problem, setProblem] = useState<Problem>();
  const [busy, setBusy] = useState(false);
  const host = new URL(oidc.issuer).host;

  async function go() {
    setBusy(true);
    setProblem(undefined);
    try {
      await startSignIn(oidc);
    } catch (error) {
      setProblem({
        type: 'about:blank',
        title: 'Sign-in could not start',
        status: 0,
        detail: `The identity provider at ${host} could not be reached or answered unexpectedly: ${
          error instanceof Error ? error.message : String(error)
        }`,
      });
      setBusy(false);
    }
  }

  return (
    <main id="main" class="sign-in">
      <h1>Remote Worker</h1>
      <div class="card">
        <h2>Sign in</h2>
        {reason !== undefined && (
          <p class="notice warn" role="status">
            {reason}
          </p>
        )}
        <p class="hint">You sign in at {host}; the console keeps the token in this tab only.</p>
        {problem && <ProblemView problem={problem} />}
        <button type="button" onClick={go} disabled={busy}>
          {busy ? 'Opening…' : `Sign in with ${host}`}
        </button>
      </div>
    </main>
  );
}

/** Sign-in at the OIDC issuer when config.json names one, else with local mode's token. */
export function SignIn({ reason, oidc }: { reason?: string; oidc?: OidcConfig }) {
  if (oidc !== undefined) return <OidcSignIn {...(reason === undefined ? {} : { reason })} oidc={oidc} />;
  return <TokenSignIn {...(reason === undefined ? {} : { reason })} />;
}

/**
 * Local mode's bearer token (printed at first start, or REMOTE_WORKER_TOKEN).
 * It is checked against an authenticated route before the console opens, and
 * kept only in this tab's sessionStorage.
 */
function TokenSignIn({ reason }: { reason?: string }) {
  const [token, setToken] = useState('');
  const { busy, problem, setProblem, run } = useAction();

  async function submit(e: Event) {
    e.preventDefault();
    setProblem(undefined);
    await run(async () => {
      const { response } = await api.GET('/targets', {
        headers: { authorization: `Bearer ${token.trim()}` },
      });
      if (response.ok) session.signIn(token.trim());
      else
        setProblem({
          type: 'about:blank',
          title: 'Sign-in failed',
          status: response.status,
          detail:
            response.status === 401 ? 'The API refused this token.' : `The API answered ${response.status}.`,
        });
    });
  }

  return (
    <main id="main" class="sign-in">
      <h1>Remote Worker</h1>
      <form onSubmit={submit} class="card">
        <h2>Sign in</h2>
        {reason !== undefined && (
          <p class="notice warn" role="status">
            {reason}
          </p>
        )}
        <label for="token">API token</label>
        <input
          id="token"
          name="token"
          type="password"
          autoComplete="current-password"
          required
          value={token}
          onInput={(e) => setToken(e.currentTarget.value)}
          aria-describedby="token-help"
        />
        <span id="token-help" class="hint">
          Local mode prints it at first start (or uses REMOTE_WORKER_TOKEN). It stays in this tab only.
        </span>
        {problem && <ProblemView problem={problem} />}
        <button type="submit" disabled={busy || token.trim() === ''}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
