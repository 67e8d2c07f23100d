import type { AppDeps } from '../app/deps.ts';
import type { HttpDeps } from './handler.ts';

/** Everything an API handler may use; built by the mode's composition root. */
export type ApiDeps = AppDeps & HttpDeps;
