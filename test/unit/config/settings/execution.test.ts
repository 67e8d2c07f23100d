import { describe, expect, it } from 'vitest';
import { checkExecution, executionSettings } from '../../../../shared/config/settings/execution.ts';
import { parseArea, ruleProblems } from './area.ts';

describe('execution settings', () => {
  it('refuse a default timeout over the maximum', () => {
    const parsed = parseArea(executionSettings, { default_timeout_seconds: 7200, max_timeout_seconds: 3600 });

    expect(ruleProblems(checkExecution, parsed.value as never)).toEqual([
      'default_timeout_seconds: must not exceed max_timeout_seconds (3600)',
    ]);
  });

  it('refuse a docker volume over /ansible', () => {
    expect(parseArea(executionSettings, { local_docker_volumes: '/x:/ansible' }).problems).toEqual([
      'local_docker_volumes.0',
    ]);
  });
});
