import { isDnsLabel, isDnsSubdomain } from '../../domain/kubernetes-names.ts';
import * as z from '../../lib/zod.ts';
import { defaulted, list, optionalText, text } from './fields.ts';

/** The Kubernetes pod runner: namespace, credentials and service account. */
export const kubernetesSettings = {
  // Kubernetes pod runner (one pod per run in a namespace the runner owns).
  // Names are checked here, not at the first Kubernetes run: the API server would refuse them only then.
  kubernetes_namespace: defaulted('remote-worker', () =>
    text().check(z.refine(isDnsLabel, 'must be a DNS-1123 label (a-z, 0-9, -; at most 63 characters)')),
  ),
  /**
   * Path to a kubeconfig; absent means in-cluster credentials (the pod's service account). The file
   * must exist and hold a kubeconfig when settings are loaded (loadSettings), not at the first run.
   */
  kubernetes_kubeconfig: optionalText,
  /** Service account of the task pods: no permissions, no API token. */
  kubernetes_service_account: defaulted('remote-worker-task', () =>
    text().check(z.refine(isDnsSubdomain, 'must be a DNS-1123 subdomain name (a-z, 0-9, -, .)')),
  ),
  kubernetes_pull_secrets: () =>
    z.optional(
      list(
        z.string().check(
          z.refine(isDnsSubdomain, {
            error: (issue) => `${String(issue.input)} is not a DNS-1123 subdomain name`,
          }),
        ),
      ),
    ),
};
