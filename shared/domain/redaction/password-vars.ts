import { DEFAULT_MASK } from './redactor.ts';

/**
 * Extra vars that carry a plaintext password. The seeds let the local runner
 * forward a WinRM `ansible_password` as an extra var; its value must still
 * never be shown: it is masked in every run view and redacted from output.
 */
export const PLAINTEXT_PASSWORD_VARS = [
  'ansible_password',
  'ansible_winrm_password',
  'ansible_winrm_pass',
  'ansible_become_password',
  'ansible_become_pass',
  'ansible_ssh_pass',
] as const;

/** The string values of plaintext password extra vars, for the redactor. */
export function plaintextPasswords(extraVars: Readonly<Record<string, unknown>>): string[] {
  return PLAINTEXT_PASSWORD_VARS.flatMap((name) => {
    const value = extraVars[name];
    return typeof value === 'string' && value !== '' ? [value] : [];
  });
}

/** Extra vars as they may be shown: plaintext password values replaced by the mask. */
export function maskPasswordVars(extraVars: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(extraVars).map(([name, value]) => [
      name,
      (PLAINTEXT_PASSWORD_VARS as readonly string[]).includes(name) ? DEFAULT_MASK : value,
    ]),
  );
}
