/**
 * Operator settings as local mode, the relay and the CLI read them: the
 * loader of `./load-settings.ts`, with YAML settings files (and YAML
 * kubeconfigs named by a setting) read as well. Lambda functions import
 * `./load-settings.ts` itself and carry no YAML parser.
 */
import { parse } from 'yaml';
import {
  type LoadSettingsOptions,
  loadSettings as loadJsonSettings,
  type Settings,
} from './load-settings.ts';

export * from './load-settings.ts';

/**
 * Read settings once at cold start: the file named by REMOTE_WORKER_CONFIG (JSON,
 * or YAML for .yaml/.yml), then one environment variable per key, upper-cased.
 * Throws one SettingsInvalidError listing every problem.
 *
 * @example
 * const settings = loadSettings(); // ANSIBLE_RUNNER_AWS=ecs overrides ansible_runner_aws from the file
 */
export function loadSettings(options: LoadSettingsOptions = {}): Settings {
  return loadJsonSettings({ parseYaml: (text) => parse(text) as unknown, ...options });
}
