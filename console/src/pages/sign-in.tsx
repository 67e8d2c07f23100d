import { useState } from 'preact/hooks';
import { api, networkProblem, type Problem, session } from '../api/client.ts';
import { ProblemView } from '../components/problem.tsx';

/**
 * Local mode's bearer token (printed at first start, or REMOTE_WORKER_TOKEN).
 * It is checked against an authenticated route before the console opens, and
 * kept only in this tab's sessionStorage.
 */
export function SignIn({ reason }: { reason?: string }) {
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<Problem>();
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setProblem(undefined);
    try {
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
    } catch (error) {
      setProblem(networkProblem(error));
    } finally {
      setBusy(false);
    }
  }

  return (
    <main id="main" class="sign-in">
      <h1>Remote Worker</h1>
      <form onSubmit={submit} class="card">
        <h2>Sign in</h2>
        {reason !== undefined && (
          <p class="notice" role="status">
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
