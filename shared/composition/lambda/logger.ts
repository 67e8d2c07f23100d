import { Logger } from '@aws-lambda-powertools/logger';

const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'SILENT'] as const;
type Level = (typeof LEVELS)[number];

/**
 * The Powertools logger every function logs through, at LOG_LEVEL (validated
 * with the rest of the environment in aws-environment.ts; a function that
 * reads no other configuration, such as Healthz, falls back to INFO for a
 * value it does not know).
 */
export function lambdaLogger(level: string | undefined): Logger {
  const upper = level?.toUpperCase();
  const known = LEVELS.find((l): l is Level => l === upper);
  return new Logger({ serviceName: 'remote-worker', logLevel: known ?? 'INFO' });
}
