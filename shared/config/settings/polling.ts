import * as z from '../../lib/zod.ts';
import { defaulted } from './fields.ts';

/** Status polling of the backends without push events, and stop grace. */
export const pollingSettings = {
  // Status polling for backends without push events (ACI, Cloud Run, Kubernetes).
  poll_interval_seconds: defaulted(3, () => z.int().check(z.minimum(1), z.maximum(300))),
  /** How long a backend may answer "unknown" (errors, throttling, not found yet) before the run fails. */
  status_unknown_grace_seconds: defaulted(300, () => z.int().check(z.minimum(10), z.maximum(3600))),
  /** What a stopped task gets between the stop signal and the kill. */
  cleanup_grace_seconds: defaulted(30, () => z.int().check(z.minimum(0), z.maximum(600))),
};
