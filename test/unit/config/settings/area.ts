import { z } from 'zod';

/** One area's keys on their own, parsed strictly; answers the value or the paths of the problems. */
export function parseArea(shape: z.ZodRawShape, input: Record<string, unknown>) {
  const result = z.strictObject(shape).safeParse(input);
  return result.success
    ? { value: result.data as Record<string, unknown>, problems: [] }
    : { value: undefined, problems: result.error.issues.map((i) => i.path.join('.')) };
}

/** The problems an area's rules report for `settings`, as `key: message`. */
export function ruleProblems<T>(
  check: (settings: T, context: import('../../../../shared/config/settings/fields.ts').RuleContext) => void,
  settings: T,
): string[] {
  const problems: string[] = [];
  check(settings, {
    needs: (s, key, why) => {
      if ((s as Record<string, unknown>)[key] === undefined) problems.push(`${key}: must be set ${why}`);
    },
    issue: (key, message) => problems.push(`${key}: ${message}`),
  });
  return problems;
}
