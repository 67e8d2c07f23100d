import type { AppDeps } from '../../shared/app/deps.ts';
import type { HttpDeps } from '../../shared/http/handler.ts';

/** Everything an API handler may use; built by the mode's composition root. */
export type ApiDeps = AppDeps & HttpDeps;
