import { describe, expect, it } from 'vitest';
import { detectTrouble, TroubleDetector, troubleMessage } from '../../../shared/domain/troubleshooting.ts';

/**
 * Recorded output for the causes this machine cannot produce for real
 * (test/e2e/troubleshooting.test.ts produces the others): Ansible 2.14's
 * winrm plugin with pywinrm against a closed port, kubectl and the
 * Kubernetes Python client against an API behind an allow-list (packets
 * dropped, so the connect times out), bash without docker.
 */
const RECORDED = {
  winrmRefused:
    'fatal: [hv01]: UNREACHABLE! => {"changed": false, "msg": "ntlm: HTTPSConnectionPool(host=\'10.1.0.7\', port=5986): Max retries exceeded with url: /wsman (Caused by NewConnectionError(\'<urllib3.connection.HTTPSConnection object at 0x7f2c5a1d0b50>: Failed to establish a new connection: [Errno 111] Connection refused\'))", "unreachable": true}',
  kubectlTimeout: 'Unable to connect to the server: dial tcp 20.62.134.9:443: i/o timeout',
  kubectlDeadline: 'Unable to connect to the server: context deadline exceeded',
  k8sModuleTimeout:
    'fatal: [localhost]: FAILED! => {"changed": false, "msg": "Failed to get client due to HTTPSConnectionPool(host=\'aks-1.hcp.westeurope.azmk8s.io\', port=443): Max retries exceeded with url: /version (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f8>, \'Connection to aks-1.hcp.westeurope.azmk8s.io timed out. (connect timeout=None)\'))"}',
  bashDocker: '/bin/sh: 1: docker: not found',
  bashDocker2: 'bash: line 1: docker: command not found',
  pywinrm:
    'fatal: [win-01]: FAILED! => {"msg": "winrm or requests is not installed: No module named \'winrm\'"}',
  sshKey:
    'fatal: [web-01]: UNREACHABLE! => {"changed": false, "msg": "Failed to connect to the host via ssh: ec2-user@10.0.0.5: Permission denied (publickey).", "unreachable": true}',
  sshPassword:
    'fatal: [pve]: UNREACHABLE! => {"msg": "Invalid/incorrect password: Permission denied, please try again."}',
} as const;

describe('detectTrouble', () => {
  it('names each cause the seeds list from the tool’s own words', () => {
    expect(detectTrouble(RECORDED.winrmRefused, 'vm')).toBe('winrm_refused');
    expect(detectTrouble(RECORDED.pywinrm, 'vm')).toBe('pywinrm_missing');
    expect(detectTrouble(RECORDED.sshKey, 'vm')).toBe('ssh_auth_failed');
    expect(detectTrouble(RECORDED.sshPassword, 'vm')).toBe('ssh_auth_failed');
    expect(detectTrouble(RECORDED.bashDocker, 'vm')).toBe('docker_missing');
    expect(detectTrouble(RECORDED.bashDocker2, 'vm')).toBe('docker_missing');
    expect(detectTrouble('docker run: the docker CLI (docker) is not installed', 'vm')).toBe(
      'docker_missing',
    );
    for (const line of [RECORDED.kubectlTimeout, RECORDED.kubectlDeadline, RECORDED.k8sModuleTimeout]) {
      expect(detectTrouble(line, 'k8s_op')).toBe('k8s_api_timeout');
      expect(detectTrouble(line, 'cluster_play')).toBe('k8s_api_timeout');
    }
  });

  it('does not call a VM play’s timeout the cluster API’s, nor ordinary failures anything', () => {
    expect(detectTrouble(RECORDED.kubectlTimeout, 'vm')).toBeUndefined();
    expect(detectTrouble('fatal: [localhost]: FAILED! => {"msg": "boom"}', 'vm')).toBeUndefined();
    expect(
      detectTrouble('ok: [web-01] => {"msg": "Permission denied is a fine word"}', 'vm'),
    ).toBeUndefined();
  });

  it('keeps the first cause: a later echo does not replace it', () => {
    const detector = new TroubleDetector('vm');
    for (const line of ['PLAY [all]', RECORDED.pywinrm, RECORDED.sshKey]) detector.feed(line);

    expect(detector.found).toBe('pywinrm_missing');
  });
});

describe('troubleMessage', () => {
  it('gives the per-cloud secret hint for SSH authentication', () => {
    expect(troubleMessage('ssh_auth_failed', { kind: 'vm', cloud: 'aws' })).toBe(
      'SSH authentication failed on cloud target (AWS) — verify ansible_ssh_key_sm_name is set and the IAM role has secretsmanager:GetSecretValue on that secret',
    );
    expect(troubleMessage('ssh_auth_failed', { kind: 'vm', cloud: 'gcp' })).toMatch(
      /^SSH authentication failed on cloud target \(GCP\) — verify gcp_ssh_key_secret_name is set and the service account has roles\/secretmanager\.secretAccessor on the secret\. Ensure the public key is in the instance's ~\/\.ssh\/authorized_keys/,
    );
    expect(troubleMessage('ssh_auth_failed', { kind: 'vm', cloud: 'azure' })).toBe(
      "SSH authentication failed on cloud target (Azure) — verify azure_ssh_key_secret_name and azure_key_vault_url are set and the identity has Key Vault Secrets User on the vault. Ensure the public key is in the VM's ~/.ssh/authorized_keys",
    );
    expect(troubleMessage('ssh_auth_failed', { kind: 'vm', hypervisor: 'proxmox' })).toContain(
      'API-token-only auth is not sufficient for SSH',
    );
    expect(troubleMessage('ssh_auth_failed', { kind: 'vm', hypervisor: 'vsphere' })).toContain(
      'SSH must be enabled on the ESXi host',
    );
  });

  it('gives the Enable-PSRemoting hint, the pywinrm image hint and the allow-list hint', () => {
    expect(troubleMessage('winrm_refused', { kind: 'vm', hypervisor: 'hyperv' })).toBe(
      '"WinRM connection refused" — WinRM is not enabled or not reachable on the Hyper-V host: run Enable-PSRemoting -Force on the host and open ports 5985/5986 to the runner',
    );
    expect(troubleMessage('pywinrm_missing', { kind: 'vm' })).toMatch(/^"pywinrm is not installed" — /);
    expect(troubleMessage('docker_missing', { kind: 'vm' })).toMatch(
      /^"docker: command not found" — the Docker socket is not mounted.*\/var\/run\/docker\.sock/,
    );
    expect(troubleMessage('k8s_api_timeout', { kind: 'k8s_op', runner: 'ecs' })).toBe(
      "Cloud k8s task timed out reaching the API — the cluster API isn't reachable from the runner's network: confirm the cluster has a public endpoint and add the runner's egress IP/CIDR to the cluster's authorized-networks allow-list",
    );
    expect(troubleMessage('k8s_api_timeout', { kind: 'k8s_op', runner: 'local' })).toMatch(
      /^The k8s task timed out/,
    );
  });
});
