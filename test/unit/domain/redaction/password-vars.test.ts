import { describe, expect, it } from 'vitest';
import { maskPasswordVars, plaintextPasswords } from '../../../../shared/domain/redaction/password-vars.ts';

describe('plaintext password extra vars', () => {
  it('lists the values of password vars only', () => {
    expect(
      plaintextPasswords({
        ansible_password: 'pw1',
        ansible_become_pass: 'pw2',
        greeting: 'hi',
        ansible_user: 'x',
      }),
    ).toEqual(['pw1', 'pw2']);
  });

  it('masks password vars and keeps the others', () => {
    expect(maskPasswordVars({ ansible_winrm_password: 'pw', greeting: 'hi' })).toEqual({
      ansible_winrm_password: '********',
      greeting: 'hi',
    });
  });
});
