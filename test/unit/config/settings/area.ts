import * as z from 'zod';
import {
  buildShape,
  type LazyShape,
  type RuleContext,
  ruleContext,
} from '../../../../shared/config/settings/fields.ts';

/** One area's keys on their own, parsed strictly: the value, or the paths of the problems. */
export function parseArea(shape: LazyShape, input: Record<string, unknown>) {
  const result = z.strictObject(buildShape(shape)).safeParse(input);
  return result.success
    ? { value: result.data as Record<string, unknown>, problems: [] }
    : { value: undefined, problems: result.error.issues.map((i) => i.path.join('.')) };
}

/** What an area's rules report for `settings` (through the real ruleContext), as `key: message`. */
export function ruleProblems<T extends object>(check: (s: T, c: RuleContext) => void, settings: T): string[] {
  const result = z
    .custom<T>(() => true)
    .superRefine((s, ctx) => check(s, ruleContext(ctx)))
    .safeParse(settings);
  return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}
