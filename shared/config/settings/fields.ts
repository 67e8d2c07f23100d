import * as z from 'zod';
import { RUNNERS } from '../../domain/run.ts';

/*
 * The field types the settings areas share, and the shape of an area's rules
 * across its keys (checked once every key has parsed).
 */

export const runner = z.enum(RUNNERS);

/*
 * `text()` and `httpUrl()` hand out one schema each rather than a new one per
 * key: a zod schema is immutable (`.optional()`, `.max()` return new ones),
 * and zod 4 builds every schema with real work (about 30 µs each), so a new
 * string-trim-min chain for each of the ~50 text keys was ~150 schemas, a few
 * milliseconds of every Lambda cold start, for the same validation.
 */
const TEXT = z.string().trim().min(1, 'must not be empty: omit the key to leave it unset');
const HTTP_URL = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

/** An empty string is almost always a half-deleted value; make the operator omit the key instead. */
export const text = () => TEXT;

/** An http(s) URL (Password Safe, Portainer, an Azure blob service). */
export const httpUrl = () => HTTP_URL;

/**
 * Lists arrive as one comma-separated string from an environment variable, but
 * a YAML file may just as well hold a real list; both end up as string[].
 */
export const list = (item: z.ZodString) =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((value) =>
      (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter((s) => s !== ''),
    )
    .pipe(z.array(item));

/**
 * One id or several, comma-separated (how the seeds' `ansible_ecs_subnet_id` is written), each of a
 * shape: a typo in a network id otherwise shows up only when the cloud refuses the first launch.
 */
export const idList = (pattern: RegExp, example: string) =>
  text().refine((value) => value.split(',').every((id) => id.trim() === '' || pattern.test(id.trim())), {
    error: `must be ${example}, or several comma-separated`,
  });

export const cidr = z.union([z.cidrv4(), z.cidrv6()], {
  error: 'must be an IPv4 or IPv6 CIDR such as 203.0.113.7/32',
});

/** The parsed settings of one area's keys. */
export type AreaSettings<S extends z.ZodRawShape> = z.output<z.ZodObject<S>>;

/** How an area's rules report a problem: each on the key it names. */
export interface RuleContext {
  /** `key` must be set (`must be set <why>`) when it is not. */
  needs<T extends object>(settings: T, key: keyof T & string, why: string): void;
  issue(key: string, message: string): void;
}

export function ruleContext(ctx: z.RefinementCtx): RuleContext {
  const issue = (key: string, message: string) => ctx.addIssue({ code: 'custom', path: [key], message });
  return {
    needs: (settings, key, why) => {
      if (settings[key] === undefined) issue(key, `must be set ${why}`);
    },
    issue,
  };
}
