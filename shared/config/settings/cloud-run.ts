import * as z from '../../lib/zod.ts';
import { optionalText, text } from './fields.ts';

/** The Cloud Run runner (GCP jobs): project, region and VPC connector. */
export const cloudRunSettings = {
  // Cloud Run plumbing.
  gcp_project_id: optionalText,
  gcp_region: optionalText,
  gcp_ansible_cloud_run_region: optionalText,
  /** A connector name (expanded in the run's project and region) or its full resource name. */
  gcp_ansible_vpc_connector: () =>
    z.optional(
      text().check(
        z.regex(
          /^(?:[a-z][-a-z0-9]{0,23}[a-z0-9]|projects\/[^/]+\/locations\/[^/]+\/connectors\/[a-z][-a-z0-9]{0,23}[a-z0-9])$/,
          'must be a Serverless VPC Access connector name (a-z, 0-9, -; 2–25 characters) or projects/<p>/locations/<r>/connectors/<name>',
        ),
      ),
    ),
};
