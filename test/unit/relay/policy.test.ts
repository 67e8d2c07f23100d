import { describe, expect, it } from 'vitest';
import { relayPolicyDocument } from '../../../runners/relay/policy.ts';

const QUEUE = 'arn:aws:sqs:eu-west-1:123456789012:remote-worker-relay';
const TABLE = 'arn:aws:dynamodb:eu-west-1:123456789012:table/remote-worker-runs';
const LOGS = 'arn:aws:dynamodb:eu-west-1:123456789012:table/remote-worker-logs';
const SECRETS = { region: 'eu-west-1', account: '123456789012', namePrefix: 'relay/' } as const;

describe('relayPolicyDocument', () => {
  it('grants exactly the calls the relay makes, on its own queue, table, state index and secrets', () => {
    expect(relayPolicyDocument({ queueArn: QUEUE, tableArn: TABLE, secrets: SECRETS })).toEqual({
      Version: '2012-10-17',
      Statement: [
        {
          Sid: 'RelayQueue',
          Effect: 'Allow',
          Action: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility'],
          Resource: [QUEUE],
        },
        {
          Sid: 'RunsAndLogs',
          Effect: 'Allow',
          Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'],
          Resource: [TABLE],
        },
        {
          Sid: 'ActiveRuns',
          Effect: 'Allow',
          Action: ['dynamodb:Query'],
          Resource: [`${TABLE}/index/runs-by-state`],
        },
        {
          Sid: 'RunSecrets',
          Effect: 'Allow',
          Action: ['secretsmanager:GetSecretValue'],
          Resource: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay/*'],
        },
        {
          Sid: 'EndedRunSecrets',
          Effect: 'Allow',
          Action: ['secretsmanager:DeleteSecret'],
          Resource: ['arn:aws:secretsmanager:eu-west-1:123456789012:secret:relay/runs/*'],
        },
      ],
    });
  });

  it('splits run and log grants when the logs have their own table', () => {
    const doc = relayPolicyDocument({ queueArn: QUEUE, tableArn: TABLE, logsTableArn: LOGS });

    expect(doc.Statement.find((s) => s.Sid === 'Runs')).toMatchObject({
      Action: ['dynamodb:GetItem', 'dynamodb:PutItem'],
      Resource: [TABLE],
    });
    expect(doc.Statement.find((s) => s.Sid === 'Logs')).toMatchObject({
      Action: ['dynamodb:PutItem', 'dynamodb:UpdateItem'],
      Resource: [LOGS],
    });
    expect(doc.Statement.some((s) => s.Action.some((a) => a.startsWith('secretsmanager:')))).toBe(false);
  });

  it('never grants a wildcard action, a wildcard resource, sending, deleting, scanning or writing in bulk', () => {
    for (const input of [
      { queueArn: QUEUE, tableArn: TABLE, secrets: SECRETS },
      { queueArn: QUEUE, tableArn: TABLE, logsTableArn: LOGS, secrets: { ...SECRETS, partition: 'aws-cn' } },
    ]) {
      const doc = relayPolicyDocument(input);
      const actions = doc.Statement.flatMap((s) => s.Action);
      const resources = doc.Statement.flatMap((s) => s.Resource);
      expect(actions.filter((a) => a.includes('*'))).toEqual([]);
      // The only wildcards are the secret-name suffix Secrets Manager adds, after the non-empty prefix
      // (and the per-run secrets below it, which the relay deletes when its run ends).
      expect(resources.filter((r) => r.includes('*'))).toEqual([
        expect.stringMatching(/^arn:aws(-cn)?:secretsmanager:eu-west-1:123456789012:secret:relay\/\*$/),
        expect.stringMatching(/^arn:aws(-cn)?:secretsmanager:eu-west-1:123456789012:secret:relay\/runs\/\*$/),
      ]);
      for (const forbidden of [
        'sqs:SendMessage',
        'dynamodb:Scan',
        'dynamodb:DeleteItem',
        'dynamodb:BatchWriteItem',
        'dynamodb:TransactWriteItems',
        'secretsmanager:ListSecrets',
      ]) {
        expect(actions).not.toContain(forbidden);
      }
      expect(doc.Statement.every((s) => s.Effect === 'Allow' && s.Resource.length > 0)).toBe(true);
    }
  });

  it('refuses an empty secret prefix, which would allow every secret', () => {
    expect(() =>
      relayPolicyDocument({ queueArn: QUEUE, tableArn: TABLE, secrets: { ...SECRETS, namePrefix: '' } }),
    ).toThrow(/namePrefix/);
  });
});
