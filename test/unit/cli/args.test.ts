import { describe, expect, it } from 'vitest';
import { parseInvocation, runRequest, UsageError } from '../../../bin/cli/args.ts';

const noFiles = async (path: string): Promise<Buffer> => {
  if (path === 'vars.json') return Buffer.from('{"greeting":"from a file"}');
  throw new Error(`ENOENT: ${path}`);
};

describe('parseInvocation', () => {
  it('reads a command, its positionals and its options in any order', () => {
    expect(parseInvocation(['--json', 'runs', 'logs', '--follow', '01J'])).toEqual({
      command: 'runs logs',
      args: { id: '01J' },
      options: { json: true, follow: true },
    });
  });

  it('collects repeated --secret options', () => {
    const inv = parseInvocation(['runs', 'submit', '--secret', 'a=x', '--secret', 'b=y']);

    expect(inv).toMatchObject({ options: { secret: ['a=x', 'b=y'] } });
  });

  it.each([
    [[], undefined],
    [['--help'], undefined],
    [['help', 'runs'], 'runs'],
    [['runs', '--help'], 'runs'],
  ])('answers %j with help', (argv, topic) => {
    expect(parseInvocation(argv)).toEqual({ command: 'help', ...(topic === undefined ? {} : { topic }) });
  });

  it.each([
    [['runs'], /runs needs a command: submit \| get \| list \| logs \| cancel/],
    [['runs', 'explode'], /Unknown command "runs explode"/],
    [['nothing', 'here'], /Unknown command "nothing"/],
    [['runs', 'get'], /runs get needs <id>/],
    [['runs', 'get', 'a', 'b'], /unexpected "b"/],
    [['runs', 'get', 'a', '--follow'], /runs get does not take --follow/],
    [['runs', 'list', '--bogus'], /Unknown option '--bogus'/],
    [['targets', 'list', '--url'], /argument missing/],
  ])('refuses %j as a usage error', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });
});

describe('runRequest', () => {
  it('builds the run body from the options', async () => {
    const body = await runRequest(
      {
        kind: 'vm',
        asset: 'hello/site.yml',
        'extra-vars': '@vars.json',
        secret: ['db_password=prod/db'],
        timeout: '90',
        'ssh-user': 'deploy',
      },
      noFiles,
    );

    expect(body).toEqual({
      kind: 'vm',
      asset: 'hello/site.yml',
      extraVars: { greeting: 'from a file' },
      secrets: [{ var: 'db_password', secret: 'prod/db' }],
      timeoutSeconds: 90,
      sshUser: 'deploy',
    });
  });

  it.each([
    [{ asset: 'a.yml' }, /--kind is required/],
    [{ kind: 'vm' }, /--asset is required/],
    [{ kind: 'vm', asset: 'a.yml', 'extra-vars': '{nope' }, /--extra-vars is not valid JSON/],
    [{ kind: 'vm', asset: 'a.yml', 'extra-vars': '[1]' }, /--extra-vars must be a JSON object/],
    [{ kind: 'vm', asset: 'a.yml', 'extra-vars': '@missing.json' }, /cannot read missing.json/],
    [{ kind: 'vm', asset: 'a.yml', secret: ['novalue'] }, /--secret takes var=secret-name/],
    [{ kind: 'vm', asset: 'a.yml', timeout: '-3' }, /--timeout must be a positive whole number/],
  ])('refuses %j', async (options, message) => {
    await expect(runRequest(options, noFiles)).rejects.toThrow(message);
  });
});
