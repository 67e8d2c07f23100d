import { useEffect, useState } from 'preact/hooks';
import { session } from './api/client.ts';
import type { OidcConfig } from './config.ts';
import { AssetsPage } from './pages/assets.tsx';
import { InventoryPage } from './pages/inventory.tsx';
import { NewRunPage } from './pages/new-run.tsx';
import { RunDetailPage } from './pages/run-detail.tsx';
import { RunsPage } from './pages/runs.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { TargetsPage } from './pages/targets.tsx';
import { href, type Route, useRoute } from './router.ts';

const NAV = [
  { path: '/runs', label: 'Runs' },
  { path: '/new', label: 'New run' },
  { path: '/inventory', label: 'Inventory' },
  { path: '/targets', label: 'Targets' },
  { path: '/assets', label: 'Assets' },
] as const;

function page(route: Route) {
  const run = /^\/runs\/([^/]+)$/.exec(route.path);
  if (run?.[1]) return { title: 'Run', body: <RunDetailPage id={decodeURIComponent(run[1])} /> };
  const batch = /^\/batches\/([^/]+)$/.exec(route.path);
  if (batch?.[1])
    return { title: 'Batch', body: <RunsPage query={route.query} batch={decodeURIComponent(batch[1])} /> };
  switch (route.path) {
    case '/new':
      return { title: 'New run', body: <NewRunPage query={route.query} /> };
    case '/inventory':
      return { title: 'Inventory', body: <InventoryPage /> };
    case '/targets':
      return { title: 'Targets', body: <TargetsPage /> };
    case '/assets':
      return { title: 'Assets', body: <AssetsPage /> };
    default:
      return { title: 'Runs', body: <RunsPage query={route.query} /> };
  }
}

/** `oidc`: a deployed console signs in at the issuer; without it, with local mode's token. */
export function App({ oidc }: { oidc?: OidcConfig }) {
  const route = useRoute();
  const [signedIn, setSignedIn] = useState(() => session.token() !== null);
  const [signOutReason, setSignOutReason] = useState(() => session.lastReason());
  useEffect(() => {
    const unsubscribe = session.subscribe((reason) => {
      setSignedIn(session.token() !== null);
      setSignOutReason(reason);
    });
    // A sign-out before this effect ran (a page's first request answered 401 that fast) is not lost.
    setSignedIn(session.token() !== null);
    setSignOutReason(session.lastReason());
    return unsubscribe;
  }, []);
  const current = page(route);
  useEffect(() => {
    document.title = `${signedIn ? current.title : 'Sign in'} · Remote Worker`;
  }, [signedIn, current.title]);

  if (!signedIn) {
    return (
      <SignIn
        {...(signOutReason === undefined ? {} : { reason: signOutReason })}
        {...(oidc === undefined ? {} : { oidc })}
      />
    );
  }
  const section = `/${route.path.split('/')[1] === 'batches' ? 'runs' : route.path.split('/')[1]}`;
  return (
    <>
      {/* A button, not a link: the hash is the router's, so "#main" would be read as a route. */}
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <span class="brand">Remote Worker</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.path}>
                <a href={href(n.path)} aria-current={section === n.path ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="secondary sign-out" onClick={() => session.signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {current.body}
      </main>
    </>
  );
}
