import * as z from '../../lib/zod.ts';
import { type AreaSettings, defaulted, list, type RuleContext, text } from './fields.ts';

/** How runs execute here: the local executor, relay concurrency, timeouts and dispatch retries. */
export const executionSettings = {
  local_executor: defaulted('auto', () => z.enum(['auto', 'process', 'docker'])),
  /** The docker executor's CLI: `docker`, or `podman` (which takes the same arguments). */
  local_docker_cli: defaulted('docker', () => text()),
  /** Extra bind mounts for the docker executor's task containers, `-v` syntax, never over /ansible. */
  local_docker_volumes: () =>
    z.optional(
      list(
        z.string().check(
          z.regex(/^\/[^:]*:\/[^:]*(:(ro|rw))?$/, 'must be /host/path:/container/path or …:ro'),
          z.refine((v) => !/^[^:]*:\/ansible(\/|:|$)/.test(v), 'must not mount over /ansible'),
        ),
      ),
    ),
  // The seeds' WORKER_REPLICAS: the ceiling on how many hosts a batch touches at once.
  relay_concurrency: defaulted(3, () => z.int().check(z.minimum(1), z.maximum(64))),
  default_timeout_seconds: defaulted(3600, () => z.int().check(z.minimum(1), z.maximum(86_400))),
  // 7 days: Cloud Run's task timeout ceiling, the tightest of the backends.
  max_timeout_seconds: defaulted(86_400, () => z.int().check(z.minimum(1), z.maximum(604_800))),
  // SQS accepts a maxReceiveCount of 1..1000.
  dispatch_max_receive_count: defaulted(5, () => z.int().check(z.minimum(1), z.maximum(1000))),
};

/** A default timeout above the ceiling would refuse every run that takes the default. */
export function checkExecution(s: AreaSettings<typeof executionSettings>, check: RuleContext): void {
  if (s.default_timeout_seconds > s.max_timeout_seconds) {
    check.issue('default_timeout_seconds', `must not exceed max_timeout_seconds (${s.max_timeout_seconds})`);
  }
}
