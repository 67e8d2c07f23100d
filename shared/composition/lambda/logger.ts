import { jsonLineLogger, LOG_LEVELS, type LogLevel } from '../../lib/logger.ts';
import type { Logger } from '../../ports/logger.ts';

/**
 * The logger the API functions log through, at LOG_LEVEL (validated with
 * the rest of the environment in aws-environment.ts; a function that reads
 * no other configuration, such as Healthz, falls back to INFO for a value it
 * does not know): one JSON line per entry in Powertools' shape, without
 * loading Powertools (shared/lib/logger.ts says why).
 */
export function lambdaLogger(level: string | undefined): Logger {
  const upper = level?.toUpperCase();
  const known = LOG_LEVELS.find((l): l is LogLevel => l === upper);
  return jsonLineLogger({ service: 'remote-worker', level: known ?? 'INFO' });
}
