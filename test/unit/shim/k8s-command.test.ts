import { describe, expect, it } from 'vitest';
import { k8sCommand } from '../../../runners/shim/k8s-command.ts';

describe('k8sCommand', () => {
  it('builds kubectl and helm argv without a shell', () => {
    expect(k8sCommand({ action: 'delete' }, '/m.yml')).toEqual({
      tool: 'kubectl',
      args: ['delete', '-f', '/m.yml'],
    });
    expect(
      k8sCommand({ action: 'get_secret', namespace: 'eso', name: 'token' }, undefined).args.slice(0, 5),
    ).toEqual(['get', 'secret', 'token', '--namespace', 'eso']);
    expect(
      k8sCommand({ action: 'helm_repo_add', repoName: 'eso', repoUrl: 'https://charts.example/' }, undefined),
    ).toEqual({
      tool: 'helm',
      args: ['repo', 'add', '--force-update', 'eso', 'https://charts.example/'],
    });
    expect(
      k8sCommand(
        {
          action: 'helm_upgrade',
          release: 'eso',
          chart: 'eso/external-secrets',
          namespace: 'eso',
          version: '0.9.1',
        },
        '/values.yml',
      ),
    ).toEqual({
      tool: 'helm',
      args: [
        'upgrade',
        '--install',
        'eso',
        'eso/external-secrets',
        '--namespace',
        'eso',
        '--create-namespace',
        '--version',
        '0.9.1',
        '--values',
        '/values.yml',
      ],
    });
  });

  it('prints a secret without its values', () => {
    const template = k8sCommand({ action: 'get_secret', namespace: 'eso', name: 'token' }, undefined).args.at(
      -1,
    );

    expect(template).toMatch(/^go-template=/);
    expect(template).not.toContain('.data.');
    expect(template).toContain('range $k, $v := .data');
    expect(template).not.toMatch(/\{\{\s*\$v\s*\}\}/);
  });

  it('refuses names that would be read as flags', () => {
    expect(() =>
      k8sCommand({ action: 'helm_upgrade', release: '--post-renderer=/x', chart: 'c' }, undefined),
    ).toThrow(/must not .* start with "-"/);
  });
});
