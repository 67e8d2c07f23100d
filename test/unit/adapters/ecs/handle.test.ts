import { ClientException, InvalidParameterException, ServerException } from '@aws-sdk/client-ecs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ecsError } from '../../../../shared/adapters/ecs/errors.ts';
import {
  clientTokenFor,
  formatEcsHandle,
  groupFor,
  parseEcsHandle,
  parseGroup,
  parseStartedBy,
  startedByFor,
} from '../../../../shared/adapters/ecs/handle.ts';
import { LauncherUnavailableError, LaunchRejectedError } from '../../../../shared/domain/errors.ts';

const TASK = 'arn:aws:ecs:eu-west-1:123456789012:task/runs/0f1e2d3c4b5a69788796a5b4c3d2e1f0';

describe('ECS handle', () => {
  it('round-trips a handle with and without an event version', () => {
    expect(formatEcsHandle({ cluster: 'runs', taskArn: TASK })).toBe(`ecs:runs/${TASK}`);
    expect(parseEcsHandle(`ecs:runs/${TASK}`)).toEqual({ cluster: 'runs', taskArn: TASK });
    expect(parseEcsHandle(formatEcsHandle({ cluster: 'runs', taskArn: TASK, version: 7 }))).toEqual({
      cluster: 'runs',
      taskArn: TASK,
      version: 7,
    });
  });

  it('stores the short cluster name when given a cluster ARN', () => {
    const handle = formatEcsHandle({
      cluster: 'arn:aws:ecs:eu-west-1:123456789012:cluster/runs',
      taskArn: TASK,
    });
    expect(parseEcsHandle(handle)).toEqual({ cluster: 'runs', taskArn: TASK });
  });

  it('rejects what is not an ECS handle', () => {
    for (const h of [undefined, 'relay:relay', 'ecs:', 'ecs:runs', 'ecs:/x', 'ecs:runs/']) {
      expect(parseEcsHandle(h)).toBeUndefined();
    }
  });

  it('keeps a ULID run key within the ECS limits and finds the run again from startedBy and group', () => {
    const key = { runId: '01JD3Q6Z8W3S9V0M2K4T7YB5NE', attempt: 12 };
    expect(clientTokenFor(key)).toBe('01JD3Q6Z8W3S9V0M2K4T7YB5NE#12');
    expect(startedByFor(key)).toBe('rw/01JD3Q6Z8W3S9V0M2K4T7YB5NE/12');
    expect(parseStartedBy(startedByFor(key))).toEqual(key);
    expect(parseGroup(groupFor(key))).toEqual(key);
  });

  it('hashes a run id that does not fit startedBy, deterministically, and the group still names the run', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 60 }), fc.nat({ max: 999_999 }), (runId, attempt) => {
        const startedBy = startedByFor({ runId, attempt });
        expect(startedBy.length).toBeLessThanOrEqual(36);
        expect(startedBy).toMatch(/^[A-Za-z0-9_/-]+$/);
        expect(startedByFor({ runId, attempt })).toBe(startedBy);
        expect(parseGroup(groupFor({ runId, attempt }))).toEqual({ runId, attempt });
        const parsed = parseStartedBy(startedBy);
        if (parsed !== undefined) expect(parsed).toEqual({ runId, attempt });
      }),
    );
  });

  it('refuses a client token longer than 64 characters', () => {
    expect(() => clientTokenFor({ runId: 'r'.repeat(62), attempt: 10 })).toThrow(RangeError);
  });
});

describe('ecsError', () => {
  const meta = (httpStatusCode: number) => ({ $metadata: { httpStatusCode } });

  it('makes throttling, 5xx and unanswered calls retryable', () => {
    const throttled = Object.assign(new Error('Rate exceeded'), {
      name: 'ThrottlingException',
      ...meta(400),
    });
    const server = new ServerException({ message: 'boom', $metadata: { httpStatusCode: 500 } });
    const html500 = Object.assign(new SyntaxError('Unexpected token <'), meta(500));
    const network = Object.assign(new Error('connect ECONNREFUSED'), { $metadata: { attempts: 1 } });
    for (const e of [throttled, server, html500, network, new Error('socket hang up')]) {
      expect(ecsError(e, 'RunTask')).toBeInstanceOf(LauncherUnavailableError);
    }
  });

  it('makes a refused request permanent, naming the action and the service words', () => {
    const client = new ClientException({
      message: 'Unable to describe task definition.',
      $metadata: { httpStatusCode: 400 },
    });
    const invalid = new InvalidParameterException({
      message: 'bad subnet',
      $metadata: { httpStatusCode: 400 },
    });
    expect(ecsError(client, 'RunTask')).toEqual(
      new LaunchRejectedError(
        'ECS RunTask was refused (ClientException: Unable to describe task definition.)',
      ),
    );
    expect(ecsError(invalid, 'RunTask')).toBeInstanceOf(LaunchRejectedError);
  });
});
