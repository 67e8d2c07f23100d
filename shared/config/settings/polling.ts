import * as z from 'zod';
import { defaulted } from './fields.ts';

/** Status polling of the backends without push events, and stop grace. */
export const pollingSettings = {
  // Status polling for backends without push events (ACI, Cloud Run, Kubernetes).
  poll_interval_seconds: defaulted(3, () => z.int().min(1).max(300)),
  /** How long a backend may answer "unknown" (errors, throttling, not found yet) before the run fails. */
  status_unknown_grace_seconds: defaulted(300, () => z.int().min(10).max(3600)),
  /** What a stopped task gets between the stop signal and the kill. */
  cleanup_grace_seconds: defaulted(30, () => z.int().min(0).max(600)),
};
