import { describe, expect, it } from 'vitest';
import { checkStorage, storageSettings } from '../../../../shared/config/settings/storage.ts';
import { parseArea, ruleProblems } from './area.ts';

describe('storage settings', () => {
  it('default the start deadline to 900 s and refuse an unknown backend', () => {
    expect(parseArea(storageSettings, {}).value).toEqual({ start_deadline_seconds: 900 });
    expect(parseArea(storageSettings, { storage_backend: 'ftp' }).problems).toEqual(['storage_backend']);
  });

  it('need the location of the backend chosen', () => {
    expect(
      ruleProblems(checkStorage, { storage_backend: 'azure_blob', start_deadline_seconds: 900 }),
    ).toEqual([
      'azure_storage_account_url: must be set when storage_backend is azure_blob',
      'azure_storage_container: must be set when storage_backend is azure_blob',
    ]);
    expect(ruleProblems(checkStorage, { storage_backend: 'gcs', start_deadline_seconds: 900 })).toEqual([
      'gcs_bucket: must be set when storage_backend is gcs',
    ]);
  });
});
