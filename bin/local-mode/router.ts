import { ValidationError } from '../../shared/domain/errors.ts';

/**
 * The one place local mode reads a request target: the request line's
 * target (RFC 9112 §3.2) is split into path and query, the route is found on
 * the raw path, and percent-decoding happens here and nowhere else. Every
 * failure is a ValidationError (400 problem+json), never a TypeError or
 * URIError escaping to the process.
 */

export interface RequestTarget {
  /** The path as sent (still percent-encoded): routes match on it, so `%2F` in an id never splits a segment. */
  readonly path: string;
  /** The query as sent, without the `?`; decodeQuery decodes it once the caller is known. */
  readonly rawQuery: string;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

const badTarget = (detail: string, message: string) =>
  new ValidationError(detail, [{ path: 'target', message }]);

/** `field` names the place in the problem's `errors` (`path.id`, `query`); `what` says it in the detail. */
function decode(raw: string, field: string, what: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    // URIError: a `%` not followed by two hex digits, or bytes that are not UTF-8 (`%FF`, overlong `%C0%AF`).
    throw new ValidationError(`The ${what} holds an invalid percent-encoding`, [
      { path: field, message: 'invalid percent-encoding' },
    ]);
  }
}

/** `http://host:port/p?q` → `/p?q`. Servers must accept the absolute form (RFC 9112 §3.2.2); proxies send it. */
function originFormOf(target: string): string {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw badTarget('The request target is not a valid absolute URL', 'not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw badTarget('The request target must be an http or https URL', 'unsupported scheme');
  }
  // Keep the path exactly as sent: URL#pathname would resolve dot segments and re-encode characters.
  const afterAuthority = target.slice(target.indexOf('//') + 2);
  const pathStart = afterAuthority.search(/[/?]/);
  if (pathStart < 0) return '/';
  const rest = afterAuthority.slice(pathStart);
  return rest.startsWith('?') ? `/${rest}` : rest;
}

/**
 * The query's parameters, decoded (`+` is a space); a repeated name joins its
 * values with `,`, as API Gateway does. An invalid escape is a 400.
 *
 * @example
 * decodeQuery('state=queued&tag=a&tag=b'); // { state: 'queued', tag: 'a,b' }
 */
export function decodeQuery(raw: string): Record<string, string> {
  const query: Record<string, string> = {};
  for (const pair of raw.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decode((eq < 0 ? pair : pair.slice(0, eq)).replaceAll('+', ' '), 'query', 'query string');
    const value = eq < 0 ? '' : decode(pair.slice(eq + 1).replaceAll('+', ' '), 'query', 'query string');
    query[name] = Object.hasOwn(query, name) ? `${query[name]},${value}` : value;
  }
  return query;
}

/**
 * Parse a request target in origin form (`/runs?state=queued`) or absolute
 * form (`http://host/runs`). Refused with 400: anything else (`*`, authority
 * form), a fragment, an empty path segment (`//`, which URL parsers read as
 * the start of an authority), an invalid URL. Nothing is decoded yet: a bad
 * escape is for decodeParams and decodeQuery to refuse, after authentication.
 *
 * @example
 * parseRequestTarget('/runs?state=queued&limit=5'); // { path: '/runs', rawQuery: 'state=queued&limit=5' }
 * parseRequestTarget('/////');                      // throws ValidationError: an empty segment
 */
export function parseRequestTarget(target: string): RequestTarget {
  const originForm = SCHEME.test(target) ? originFormOf(target) : target;
  if (!originForm.startsWith('/')) {
    throw badTarget('The request target must be an absolute path such as /runs', 'not an absolute path');
  }
  if (originForm.includes('#')) {
    throw badTarget('The request target must not carry a fragment', 'has a fragment');
  }
  const q = originForm.indexOf('?');
  const path = q < 0 ? originForm : originForm.slice(0, q);
  const rawQuery = q < 0 ? '' : originForm.slice(q + 1);
  if (path.slice(1).split('/').slice(0, -1).includes('')) {
    throw badTarget('The request path has an empty segment (//)', 'empty path segment');
  }
  return { path, rawQuery };
}

type Segment = { readonly literal: string } | { readonly param: string };

export interface CompiledRoute<H> {
  readonly method: string;
  /** The API Gateway route key, `GET /runs/{id}`. */
  readonly routeKey: string;
  readonly handler: H;
  readonly segments: readonly Segment[];
}

export type RouteMatch<H> =
  | { readonly kind: 'route'; readonly route: CompiledRoute<H>; readonly rawParams: readonly string[] }
  | { readonly kind: 'not_found' }
  | { readonly kind: 'method_not_allowed'; readonly allow: readonly string[] };

/** Route keys (`GET /runs/{id}`) in the API Gateway syntax, compiled once. */
export function compileRoutes<H>(routes: Readonly<Record<string, H>>): readonly CompiledRoute<H>[] {
  return Object.entries(routes).map(([routeKey, handler]) => {
    const [method = '', path = ''] = routeKey.split(' ');
    const segments = path
      .split('/')
      .slice(1)
      .map((part): Segment => {
        const param = /^\{(\w+)\}$/.exec(part)?.[1];
        return param === undefined ? { literal: part } : { param };
      });
    return { method, routeKey, handler, segments };
  });
}

function matchPath<H>(route: CompiledRoute<H>, parts: readonly string[]): string[] | undefined {
  if (parts.length !== route.segments.length) return undefined;
  const params: string[] = [];
  for (const [i, segment] of route.segments.entries()) {
    const part = parts[i] ?? '';
    if ('literal' in segment) {
      if (part !== segment.literal) return undefined;
    } else {
      if (part === '') return undefined;
      params.push(part);
    }
  }
  return params;
}

/** Find the route for a method and a raw path from parseRequestTarget; parameters stay encoded until decodeParams. */
export function matchRoute<H>(
  routes: readonly CompiledRoute<H>[],
  method: string,
  path: string,
): RouteMatch<H> {
  const parts = path.split('/').slice(1);
  const allow: string[] = [];
  for (const route of routes) {
    const rawParams = matchPath(route, parts);
    if (rawParams === undefined) continue;
    if (route.method === method) return { kind: 'route', route, rawParams };
    allow.push(route.method);
  }
  return allow.length > 0 ? { kind: 'method_not_allowed', allow } : { kind: 'not_found' };
}

/** The matched route's path parameters, percent-decoded; an invalid encoding is a 400 naming the parameter. */
export function decodeParams<H>(match: Extract<RouteMatch<H>, { kind: 'route' }>): Record<string, string> {
  const names = match.route.segments.flatMap((s) => ('param' in s ? [s.param] : []));
  return Object.fromEntries(
    names.map((name, i) => [
      name,
      decode(match.rawParams[i] ?? '', `path.${name}`, `path parameter ${name}`),
    ]),
  );
}
