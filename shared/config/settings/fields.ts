import { RUNNERS } from '../../domain/run.ts';
import { once } from '../../lib/once.ts';
import * as z from '../../lib/zod.ts';

/*
 * The field types the settings areas share, and the shape of an area's rules
 * across its keys (checked once every key has parsed).
 */

/**
 * One setting: a function that builds its schema, called the first time the
 * key is parsed. A process parses only the keys it is given (a Lambda
 * function's environment sets a handful of ~150), and zod 4 builds every
 * schema with real work, so building all of them up front was most of the
 * settings' share of a cold start. A key with a default says it with
 * `defaulted`, so an unset key takes its value without its schema being built.
 */
export type SettingDef = (() => z.ZodMiniType) & {
  readonly fallback?: unknown;
  /** Built by `optionalText`: a string given for it is checked without its schema (see there). */
  readonly plainText?: true;
};

/** An area's keys, each built on first use. */
export type LazyShape = Readonly<Record<string, SettingDef>>;

/** The zod shape an area's keys build. */
export type ShapeOf<T extends LazyShape> = { -readonly [K in keyof T]: ReturnType<T[K]> };

/** Every key's schema built: the area as a zod shape (the whole schema, an area's tests). */
export function buildShape<T extends LazyShape>(shape: T): ShapeOf<T> {
  return Object.fromEntries(Object.entries(shape).map(([key, build]) => [key, build()])) as ShapeOf<T>;
}

/**
 * A key with a default: `defaulted(3, () => z.int().check(z.minimum(1)))` builds
 * `z._default(z.int().check(z.minimum(1)), 3)` and records 3, which an unset key takes as is
 * (zod returns a default without parsing it; test/unit/config/settings/lazy.test.ts
 * holds every key to that).
 */
export function defaulted<S extends z.ZodMiniType>(
  fallback: z.util.NoUndefined<z.output<S>>,
  build: () => S,
): (() => z.ZodMiniDefault<S>) & { readonly fallback: z.util.NoUndefined<z.output<S>> } {
  return Object.assign(() => z._default(build(), fallback), { fallback });
}

export const runner = once(() => z.enum(RUNNERS));

/*
 * `text()` and `httpUrl()` hand out one schema each rather than a new one per
 * key: a zod schema is immutable (`z.optional()`, `.check()` return new ones),
 * and zod 4 builds every schema with real work (about 30 µs each), so a new
 * string-trim-min chain for each of the ~50 text keys was ~150 schemas, a few
 * milliseconds of every Lambda cold start, for the same validation.
 */
/** An empty string is almost always a half-deleted value; make the operator omit the key instead. */
export const text = once(() =>
  z.string().check(z.trim(), z.minLength(1, 'must not be empty: omit the key to leave it unset')),
);

/**
 * A text key that may be unset, `z.optional(text())`: most of the names and
 * ids an operator sets (a cluster, a bucket, a secret's name). It is marked
 * `plainText`, and loadSettings takes a string given for it by `text()`'s two
 * rules, trimmed and then not empty, without building the schema: a Lambda
 * function's environment holds two such values synth cannot seal (the
 * cluster's name, the execution role's ARN), and building their schemas took
 * loadSettings' first call from 1.3–2.2 ms to 2.9–4.5 (docs/performance.md,
 * Lambda cold start). Anything else given for it (a number from a settings
 * file), and any empty text, goes through the schema, which reports it as it
 * always has. test/unit/config/settings/lazy.test.ts holds every such key to
 * its schema.
 */
export const optionalText = Object.assign(() => z.optional(text()), { plainText: true as const });

/** An http(s) URL (Password Safe, Portainer, an Azure blob service). */
export const httpUrl = once(() => z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }));

/**
 * Lists arrive as one comma-separated string from an environment variable, but
 * a YAML file may just as well hold a real list; both end up as string[].
 */
export const list = (item: z.ZodMiniString<string>) =>
  z.pipe(
    z.pipe(
      z.union([z.string(), z.array(z.string())]),
      z.transform((value: string | string[]) =>
        (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter((s) => s !== ''),
      ),
    ),
    z.array(item),
  );

/**
 * One id or several, comma-separated (how the seeds' `ansible_ecs_subnet_id` is written), each of a
 * shape: a typo in a network id otherwise shows up only when the cloud refuses the first launch.
 */
export const idList = (pattern: RegExp, example: string) =>
  text().check(
    z.refine((value) => value.split(',').every((id) => id.trim() === '' || pattern.test(id.trim())), {
      error: `must be ${example}, or several comma-separated`,
    }),
  );

export const cidr = once(() =>
  z.union([z.cidrv4(), z.cidrv6()], { error: 'must be an IPv4 or IPv6 CIDR such as 203.0.113.7/32' }),
);

/** The parsed settings of one area's keys. */
export type AreaSettings<S extends LazyShape> = z.output<z.ZodMiniObject<ShapeOf<S>>>;

/** How an area's rules report a problem: each on the key it names. */
export interface RuleContext {
  /** `key` must be set (`must be set <why>`) when it is not. */
  needs<T extends object>(settings: T, key: keyof T & string, why: string): void;
  issue(key: string, message: string): void;
}

/** Rules that hand each problem to `report`: the whole schema's issues (ruleContext), or loadSettings' key-by-key check. */
export function reportingTo(report: (key: string, message: string) => void): RuleContext {
  return {
    needs: (settings, key, why) => {
      if (settings[key] === undefined) report(key, `must be set ${why}`);
    },
    issue: report,
  };
}

export const ruleContext = (ctx: z.core.$RefinementCtx): RuleContext =>
  reportingTo((key, message) => ctx.addIssue({ code: 'custom', path: [key], message }));
