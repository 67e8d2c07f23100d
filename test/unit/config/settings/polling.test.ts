import { describe, expect, it } from 'vitest';
import { pollingSettings } from '../../../../shared/config/settings/polling.ts';
import { parseArea } from './area.ts';

describe('polling settings', () => {
  it('default to a 3 s poll, 300 s of unknown status and 30 s of stop grace, within bounds', () => {
    expect(parseArea(pollingSettings, {}).value).toEqual({
      poll_interval_seconds: 3,
      status_unknown_grace_seconds: 300,
      cleanup_grace_seconds: 30,
    });
    expect(parseArea(pollingSettings, { poll_interval_seconds: 0 }).problems).toEqual([
      'poll_interval_seconds',
    ]);
  });
});
