#!/usr/bin/env node
// The `remote-worker` bin. The CLI is TypeScript; tsx (a runtime dependency)
// compiles it on the fly. Registering tsx's loader here, rather than relying on
// `node --import tsx`, makes the bin work through npx and node_modules/.bin.
import { register } from 'tsx/esm/api';

register();
await import('./remote-worker.ts');
