import { SHIM_EXIT } from './shim-protocol.ts';

/**
 * What a runner task's exit code means beyond "non-zero": the task shim's own
 * codes (runners/shim/main.ts) and death by signal (128 + n). Each backend
 * names its likely cause of a SIGKILL, which differs (ECS and Kubernetes:
 * memory; ACI: also a stop; Cloud Run: also its task timeout).
 *
 * @example
 * exitCodeMeaning(124); // 'the run hit its timeout inside the task'
 * exitCodeMeaning(137, 'killed by SIGKILL, often out of memory'); // that text
 */
export function exitCodeMeaning(code: number, sigkill = 'killed by SIGKILL'): string | undefined {
  switch (code) {
    case SHIM_EXIT.timedOut:
      return 'the run hit its timeout inside the task';
    case SHIM_EXIT.shimFailed:
      return 'the task shim failed before the tool ran';
    case SHIM_EXIT.notFound:
      return 'the tool could not be started';
    case 137:
      return sigkill;
    case 143:
      return 'terminated by SIGTERM';
    default:
      return code > 128 && code < 160 ? `killed by signal ${code - 128}` : undefined;
  }
}
