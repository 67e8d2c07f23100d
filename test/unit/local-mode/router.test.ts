import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compileRoutes,
  decodeParams,
  decodeQuery,
  matchRoute,
  parseRequestTarget,
} from '../../../bin/local-mode/router.ts';
import { ValidationError } from '../../../shared/domain/errors.ts';

describe('parseRequestTarget', () => {
  it('splits an origin-form target into the raw path and the raw query', () => {
    expect(parseRequestTarget('/runs?state=queued&cursor=%ZZ')).toEqual({
      path: '/runs',
      rawQuery: 'state=queued&cursor=%ZZ',
    });
  });

  it('keeps percent-escapes in the path for the router', () => {
    expect(parseRequestTarget('/runs/a%2Fb').path).toBe('/runs/a%2Fb');
  });

  it('takes the path and query of an absolute-form target exactly as sent', () => {
    expect(parseRequestTarget('http://127.0.0.1:8080/runs/../x?limit=1')).toMatchObject({
      path: '/runs/../x',
      rawQuery: 'limit=1',
    });
    expect(parseRequestTarget('http://localhost').path).toBe('/');
    expect(parseRequestTarget('http://localhost?limit=1')).toEqual({ path: '/', rawQuery: 'limit=1' });
  });

  it.each([
    ['an unterminated IPv6 host', 'http://['],
    ['a port out of range', 'http://x:99999/runs'],
    ['only slashes', '/////'],
    ['a leading empty segment', '//runs'],
    ['an empty segment inside', '/runs//logs'],
    ['an absolute URL with empty segments', 'http://x/////'],
    ['another scheme', 'ftp://x/runs'],
    ['the asterisk form', '*'],
    ['the authority form', 'example.com:443'],
    ['a fragment', '/runs#top'],
    ['an empty target', ''],
  ])('refuses %s with a ValidationError', (_what, target) => {
    expect(() => parseRequestTarget(target)).toThrow(ValidationError);
  });

  it('throws nothing but a ValidationError, whatever the target', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          fc.webUrl(),
          fc.string().map((s) => `/${s}`),
          fc.string().map((s) => `http://${s}`),
        ),
        (target) => {
          try {
            parseRequestTarget(target);
          } catch (error) {
            expect(error).toBeInstanceOf(ValidationError);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('decodeQuery', () => {
  it('decodes names and values, reads + as a space and joins a repeated name with commas', () => {
    expect(decodeQuery('state=queued&cursor=a%2Bb&q=x+y&tag=1&tag=2&flag&&')).toEqual({
      state: 'queued',
      cursor: 'a+b',
      q: 'x y',
      tag: '1,2',
      flag: '',
    });
  });

  it.each([
    ['a value', 'cursor=%ZZ'],
    ['a name', '%FF=1'],
    ['an overlong form', 'cursor=%C0%AF'],
  ])('refuses a bad escape in %s with a ValidationError', (_what, raw) => {
    expect(() => decodeQuery(raw)).toThrow(ValidationError);
  });
});

describe('matchRoute', () => {
  const routes = compileRoutes({
    'GET /runs': 'list',
    'GET /runs/{id}': 'get',
    'POST /runs/{id}/cancel': 'cancel',
    'PUT /targets/{id}': 'put',
  });

  it('finds the route and keeps its parameters encoded', () => {
    const match = matchRoute(routes, 'GET', '/runs/a%2Fb');

    expect(match).toMatchObject({
      kind: 'route',
      route: { routeKey: 'GET /runs/{id}' },
      rawParams: ['a%2Fb'],
    });
  });

  it('answers method_not_allowed with the methods the path takes, and not_found otherwise', () => {
    expect(matchRoute(routes, 'DELETE', '/runs/x')).toEqual({ kind: 'method_not_allowed', allow: ['GET'] });
    expect(matchRoute(routes, 'GET', '/runs/x/logs')).toEqual({ kind: 'not_found' });
    expect(matchRoute(routes, 'GET', '/runs/')).toEqual({ kind: 'not_found' });
  });
});

describe('decodeParams', () => {
  const routes = compileRoutes({ 'GET /runs/{id}': 'get' });
  const matched = (path: string) => {
    const match = matchRoute(routes, 'GET', path);
    if (match.kind !== 'route') throw new Error(`no route for ${path}`);
    return match;
  };

  it('decodes each parameter', () => {
    expect(decodeParams(matched('/runs/a%2Fb%20c'))).toEqual({ id: 'a/b c' });
  });

  it.each([
    ['not hex', '%ZZ'],
    ['a lone byte that is not UTF-8', '%FF'],
    ['an overlong UTF-8 form', '%C0%AF'],
    ['a truncated escape', 'abc%4'],
    ['an encoded surrogate', '%ED%A0%80'],
  ])('refuses an escape that is %s with a ValidationError naming the parameter', (_what, raw) => {
    const decode = () => decodeParams(matched(`/runs/${raw}`));

    expect(decode).toThrow(ValidationError);
    expect(decode).toThrow('The path parameter id holds an invalid percent-encoding');
  });
});
