import * as z from '../../lib/zod.ts';
import { defaulted, runner, text } from './fields.ts';

/** Which runner takes each run family, and the runner images: the core of every deployment. */
export const runnerSettings = {
  // Runner per run family. `<cloud>` keys fall back to the global one, except for
  // cluster/database plays, which default to the cloud's native runner (see runner-resolution.ts).
  ansible_runner: defaulted('local', () => runner()),
  ansible_runner_aws: () => z.optional(runner()),
  ansible_runner_azure: () => z.optional(runner()),
  ansible_runner_gcp: () => z.optional(runner()),
  ansible_runner_portainer: () => z.optional(runner()),
  k8s_runner: defaulted('local', () => runner()),
  k8s_runner_aws: () => z.optional(runner()),
  k8s_runner_azure: () => z.optional(runner()),
  k8s_runner_gcp: () => z.optional(runner()),

  // Images are settings, not code: operators mirror them to private registries.
  ansible_local_image: defaulted('chrweav/ansible-winrm:latest', () => text()),
  ansible_cloud_image: defaulted('chrweav/ansible-cloud', () => text()),
  k8s_runner_image: defaulted('dtzar/helm-kubectl', () => text()),
};
