/** What the server writes in place of a secret value (shared/domain/redaction.ts DEFAULT_MASK). */
export const DEFAULT_MASK = '********';
