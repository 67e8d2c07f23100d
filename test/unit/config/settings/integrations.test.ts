import { describe, expect, it } from 'vitest';
import { checkIntegrations, integrationSettings } from '../../../../shared/config/settings/integrations.ts';
import { parseArea, ruleProblems } from './area.ts';

describe('integration settings', () => {
  it('need the API key secret and runas user once Password Safe is chosen', () => {
    const parsed = parseArea(integrationSettings, { password_safe_url: 'https://pws.example' });

    expect(ruleProblems(checkIntegrations, parsed.value as never)).toEqual([
      'password_safe_api_key_secret: must be set with password_safe_url',
      'password_safe_runas: must be set with password_safe_url',
    ]);
  });

  it('take Portainer source CIDRs as a list', () => {
    const parsed = parseArea(integrationSettings, {
      portainer_allowed_source_cidrs: '10.0.0.0/8, 2001:db8::/32',
    });
    expect(parsed.value).toMatchObject({ portainer_allowed_source_cidrs: ['10.0.0.0/8', '2001:db8::/32'] });
  });
});
