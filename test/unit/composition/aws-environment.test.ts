import { describe, expect, it } from 'vitest';
import { AWS_ENVIRONMENT_KEYS, readAwsEnvironment } from '../../../shared/composition/aws-environment.ts';
import { SettingsInvalidError } from '../../../shared/domain/errors.ts';

const BASE = {
  RUNS_TABLE: 'runs',
  DISPATCH_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/111111111111/dispatch',
  ASSET_BUCKET: 'assets',
  LOG_GROUP: 'runs',
};

/** The problems readAwsEnvironment reports for `source`, as `path: message`. */
function problems(source: Record<string, string | undefined>): string[] {
  try {
    readAwsEnvironment(source);
  } catch (error) {
    if (error instanceof SettingsInvalidError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  return [];
}

describe('readAwsEnvironment', () => {
  it('reads the minimal environment, with the defaults of the optional variables', () => {
    const { env } = readAwsEnvironment({ ...BASE, ECS_CONTAINER_NAME: '', LOG_LEVEL: 'warn' });
    expect(env).toEqual({
      ...BASE,
      ECS_CONTAINER_NAME: 'runner',
      ECS_LOG_STREAM_PREFIX: 'run',
      LOG_LEVEL: 'WARN',
    });
  });

  it('treats an empty variable as unset', () => {
    const { env } = readAwsEnvironment({ ...BASE, RELAY_QUEUE_URL: '', LOGS_TABLE: '', ASSET_PREFIX: '' });
    expect(env.RELAY_QUEUE_URL).toBeUndefined();
    expect(env.LOGS_TABLE).toBeUndefined();
    expect(env.ASSET_PREFIX).toBeUndefined();
  });

  it('takes an http queue URL (an emulator), trimmed of blanks, and a log level in any case', () => {
    const { env } = readAwsEnvironment({
      ...BASE,
      RELAY_QUEUE_URL: ' http://127.0.0.1:5000/111111111111/relay\n',
      LOG_LEVEL: 'Debug',
    });
    expect(env.RELAY_QUEUE_URL).toBe('http://127.0.0.1:5000/111111111111/relay');
    expect(env.LOG_LEVEL).toBe('DEBUG');
  });

  it('parses ECS_TASK_DEFINITIONS from JSON', () => {
    const { env } = readAwsEnvironment({
      ...BASE,
      ECS_TASK_DEFINITIONS: '{"chrweav/ansible-cloud":"rw-ansible-cloud"}',
    });
    expect(env.ECS_TASK_DEFINITIONS).toEqual({ 'chrweav/ansible-cloud': 'rw-ansible-cloud' });
  });

  it('names every missing variable and what it should hold, at once', () => {
    expect(problems({})).toEqual([
      'RUNS_TABLE: is not set: give the DynamoDB runs table name',
      'DISPATCH_QUEUE_URL: is not set: give the dispatch SQS queue URL',
      'ASSET_BUCKET: is not set: give the S3 bucket holding assets',
      'LOG_GROUP: is not set: give the CloudWatch Logs group run output goes to',
    ]);
  });

  it('says what is wrong with each bad value', () => {
    expect(
      problems({
        ...BASE,
        DISPATCH_QUEUE_URL: 'ftp://queue',
        RELAY_QUEUE_URL: 'not a url',
        ASSET_BUCKET: 'ab',
        RUN_SECRETS_PREFIX: 'has space',
        ECS_TASK_FAMILY_PREFIX: 'a/b',
        LOG_LEVEL: 'loud',
      }),
    ).toEqual([
      'DISPATCH_QUEUE_URL: must be an SQS queue URL (https://sqs.…/account/name)',
      'RELAY_QUEUE_URL: must be an SQS queue URL (https://sqs.…/account/name)',
      'ASSET_BUCKET: must name the S3 bucket holding assets',
      'RUN_SECRETS_PREFIX: must be a Secrets Manager name prefix',
      'ECS_TASK_FAMILY_PREFIX: must be letters, digits, - and _',
      'LOG_LEVEL: Invalid option: expected one of "DEBUG"|"INFO"|"WARN"|"ERROR"|"SILENT"',
    ]);
  });

  it('says why ECS_TASK_DEFINITIONS is refused', () => {
    const format =
      'must be a JSON object mapping each runner image to its ECS task definition ({"chrweav/ansible-cloud": "remote-worker-ansible-cloud"})';
    expect(problems({ ...BASE, ECS_TASK_DEFINITIONS: '{nope' })).toEqual([
      `ECS_TASK_DEFINITIONS: ${format}; it is not JSON`,
    ]);
    expect(problems({ ...BASE, ECS_TASK_DEFINITIONS: '{"a":"","b":"x"}' })).toEqual([
      `ECS_TASK_DEFINITIONS: ${format}; bad entry at a`,
    ]);
    expect(problems({ ...BASE, ECS_TASK_DEFINITIONS: '[1]' })).toEqual([
      `ECS_TASK_DEFINITIONS: ${format}; bad entry at (top level)`,
    ]);
    expect(problems({ ...BASE, ECS_TASK_DEFINITIONS: 'null' })).toEqual([
      `ECS_TASK_DEFINITIONS: ${format}; bad entry at (top level)`,
    ]);
    // Every bad entry at once: a family that is not text, an empty image.
    expect(problems({ ...BASE, ECS_TASK_DEFINITIONS: '{"a":1,"b":"ok","":"x"}' })).toEqual([
      `ECS_TASK_DEFINITIONS: ${format}; bad entry at a, (top level)`,
    ]);
  });

  it('reports bad settings beside bad variables', () => {
    expect(problems({ ...BASE, LOG_GROUP: '', RELAY_CONCURRENCY: 'many' })).toEqual([
      'LOG_GROUP: is not set: give the CloudWatch Logs group run output goes to',
      expect.stringMatching(/^relay_concurrency: /),
    ]);
  });

  it('lists the variables it reads', () => {
    expect(AWS_ENVIRONMENT_KEYS()).toContain('ECS_TASK_DEFINITIONS');
    expect(AWS_ENVIRONMENT_KEYS()).toHaveLength(16);
  });
});
