import { useEffect, useState } from 'preact/hooks';

/**
 * Routes live in the hash (`#/runs/01J…?tab=x`): the console is one static
 * file set, served at `/` beside an API whose own paths (`/runs`, `/assets`)
 * would collide with history-style routes, and a hash never reaches a server
 * or a CDN log. Nothing secret is ever put in it.
 */
export interface Route {
  readonly path: string;
  readonly query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/runs';
  const at = raw.indexOf('?');
  const path = at === -1 ? raw : raw.slice(0, at);
  return {
    path: path.startsWith('/') ? path : `/${path}`,
    query: new URLSearchParams(at === -1 ? '' : raw.slice(at + 1)),
  };
}

export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value) params.set(key, value);
  const qs = params.toString();
  return `#${path}${qs ? `?${qs}` : ''}`;
}

export function navigate(path: string, query: Record<string, string | undefined> = {}): void {
  window.location.hash = href(path, query);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
