/**
 * The three Cloud Run clients the launcher uses, each from its own module
 * rather than `@google-cloud/run`'s index, which also loads the package's
 * five other clients and its generated `protos.js` (3.9 MB): a task function's
 * Cloud Run chunk is 157 KB where it was 1.1 MB, and loads in 260–310 ms where
 * it took 340–380 (docs/performance.md, Google Cloud clients). The package has no `exports` map, so
 * these paths are as public as the index; types still come from the index
 * (`import type` only, erased).
 */
export { ExecutionsClient } from '@google-cloud/run/build/src/v2/executions_client.js';
export { JobsClient } from '@google-cloud/run/build/src/v2/jobs_client.js';
export { TasksClient } from '@google-cloud/run/build/src/v2/tasks_client.js';
