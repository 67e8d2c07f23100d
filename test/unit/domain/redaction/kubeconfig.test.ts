import { describe, expect, it } from 'vitest';
import { kubeconfigSecrets } from '../../../../shared/domain/redaction/kubeconfig.ts';

describe('kubeconfigSecrets', () => {
  it('finds tokens, passwords and client keys in YAML (block and flow) and JSON kubeconfigs', () => {
    const key = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIGxk\n-----END EC PRIVATE KEY-----\n';
    const keyData = Buffer.from(key).toString('base64');
    const yaml = [
      'users:',
      '- name: a',
      '  user:',
      '    token: eyJhbGciOi.abc-def_ghi',
      `    client-key-data: ${keyData}`,
      '- name: b',
      "  user: {password: 'it''s', username: admin}",
      '- name: c',
      '  user:',
      '    auth-provider:',
      '      config: {id-token: "idt-123", refresh-token: rft-456}',
      '    tokenFile: /var/run/token',
    ].join('\n');
    const json = JSON.stringify({ users: [{ name: 'd', user: { token: 'json-tok-789' } }] });

    expect(kubeconfigSecrets(yaml)).toEqual(
      expect.arrayContaining(['eyJhbGciOi.abc-def_ghi', keyData, key, "it's", 'idt-123', 'rft-456']),
    );
    expect(kubeconfigSecrets(yaml)).not.toContain('/var/run/token');
    expect(kubeconfigSecrets(yaml)).not.toContain('admin');
    expect(kubeconfigSecrets(json)).toEqual(['json-tok-789']);
  });
});
