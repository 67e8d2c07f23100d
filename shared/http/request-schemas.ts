/**
 * Request bodies are the use cases' inputs (shared/app/requests.ts), validated
 * as they are. A module of their own, apart from ./schemas.ts, which every
 * route imports: zod builds a schema when its module loads, and a bundle
 * cannot drop an unused one, so a route that takes no body (GET /runs/{id})
 * would otherwise build the submit bodies at every cold start.
 */
export {
  SubmitBatchRequest as SubmitBatchBody,
  SubmitRunRequest as SubmitRunBody,
  UploadAssetRequest as UploadAssetBody,
} from '../app/requests.ts';
