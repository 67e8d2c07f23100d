import { existsSync, readFileSync } from 'node:fs';

/** One line of RW_IAM_DECISIONS, written by test/support/moto_enforcing.py. */
export interface Decision {
  readonly seq: number;
  readonly decision: 'allow' | 'deny';
  /** `arn:aws:sts::<account>:assumed-role/<role>/<session>` or an IAM user's ARN. */
  readonly principal: string;
  readonly action: string;
  readonly resource: string;
  /** For an allow by an assumed role: [policy name, statement index, Sid] of each statement that allowed it. */
  readonly statements?: readonly [string, number, string | null][];
}

/** The decisions moto's IAM enforcement made, read back from its file. */
export class IamDecisions {
  readonly #file: string;

  constructor(file: string) {
    this.#file = file;
  }

  all(): Decision[] {
    if (!existsSync(this.#file)) return [];
    return readFileSync(this.#file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Decision);
  }

  /** The sequence number of the last decision so far: pass it to `denialsSince`. */
  mark(): number {
    return this.all().at(-1)?.seq ?? 0;
  }

  denialsSince(mark: number): Decision[] {
    return this.all().filter((d) => d.seq > mark && d.decision === 'deny');
  }
}

/** `assumed-role/<role>/<session>` → the session name, which the test sets to the function's construct id. */
export const sessionOf = (principal: string): string => principal.split('/').at(-1) ?? principal;

/** "DispatchRuns (role …) was denied ecs:RunTask on arn:…", one line per denial. */
export function describeDenials(denials: readonly Decision[]): string {
  return denials
    .map((d) => `${sessionOf(d.principal)} (${d.principal}) was denied ${d.action} on ${d.resource}`)
    .join('\n');
}
