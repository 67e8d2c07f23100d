/**
 * Kubernetes object-name rules (RFC 1123, as the API server applies them),
 * in the domain so the settings schema and the Kubernetes adapter check names
 * with one rule: a bad `kubernetes_namespace` stops start-up instead of
 * failing the first run.
 */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A DNS-1123 label: namespaces, pod names.
 *
 * @example
 * isDnsLabel('remote-worker'); // true
 * isDnsLabel('Remote_Worker'); // false
 */
export const isDnsLabel = (name: string): boolean => DNS_LABEL.test(name);

/**
 * A DNS-1123 subdomain: service accounts, Secrets (image pull secrets).
 *
 * @example
 * isDnsSubdomain('registry.example'); // true
 */
export const isDnsSubdomain = (name: string): boolean => name.length <= 253 && DNS_SUBDOMAIN.test(name);
