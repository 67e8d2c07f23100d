import { describe, expect, it } from 'vitest';
import {
  CLOUD_RUN_ENV_VALUE_MAX_BYTES,
  jobEnvironment,
  jobFor,
} from '../../../../shared/adapters/cloud-run/job.ts';
import { LaunchRejectedError } from '../../../../shared/domain/errors.ts';
import { newRun, type Run } from '../../../../shared/domain/run.ts';
import type { TaskSpec } from '../../../../shared/domain/task.ts';
import type { PreparedTask } from '../../../../shared/ports/launcher.ts';

const run = (timeoutSeconds = 600): Run =>
  newRun(
    {
      id: '01JD3Q6Z8W3S9V0M2K4T7YB5NE',
      kind: 'vm',
      targetId: 't',
      asset: 'a.yml',
      requestedBy: 'alice',
      timeoutSeconds,
    },
    new Date().toISOString(),
  );
const JOB = 'rw-01jd3q6z8w3s9v0m2k4t7yb5ne-a1';

const prepared = (spec: Partial<TaskSpec>, rest: Partial<PreparedTask> = {}): PreparedTask =>
  ({ spec: { secretVars: [], ...spec } as TaskSpec, secretEnv: {}, secretRefs: {}, ...rest }) as PreparedTask;

describe('jobFor', () => {
  it('makes one task that Cloud Run never retries, with the run timeout capped at 7 days', () => {
    const job = jobFor({ project: 'p', region: 'r' }, run(30 * 86_400), JOB, 'img', []);

    expect(job.template?.taskCount).toBe(1);
    expect(job.template?.template?.maxRetries).toBe(0);
    expect(job.template?.template?.timeout).toEqual({ seconds: 604_800 });
    expect(job.labels).toEqual(job.template?.labels);
    expect(job.template?.template?.containers).toEqual([{ name: 'runner', image: 'img', env: [] }]);
  });

  it('expands a bare VPC connector name in the project and region, and passes resources and identity on', () => {
    const job = jobFor(
      {
        project: 'p',
        region: 'europe-west1',
        vpcConnector: 'c1',
        resources: { cpu: '1' },
        serviceAccount: 'task@p.iam.gserviceaccount.com',
      },
      run(),
      JOB,
      'img',
      [],
    );

    expect(job.template?.template?.vpcAccess).toEqual({
      connector: 'projects/p/locations/europe-west1/connectors/c1',
      egress: 'PRIVATE_RANGES_ONLY',
    });
    expect(job.template?.template?.containers?.[0]?.resources).toEqual({ limits: { cpu: '1' } });
    expect(job.template?.template?.serviceAccount).toBe('task@p.iam.gserviceaccount.com');
  });
});

describe('jobEnvironment', () => {
  it('references stored secrets, writes minted values through putSecret, and sends no value', async () => {
    const puts: { id: string; ttl: number }[] = [];
    const env = await jobEnvironment(
      run(600),
      JOB,
      prepared(
        { secretVars: [{ var: 'db', env: 'RW_SECRET_0' }] as TaskSpec['secretVars'] },
        {
          secretRefs: { RW_SECRET_0: 'projects/p/secrets/db-admin/versions/3' },
          secretEnv: { KUBECONFIG: 'minted-canary' },
        },
      ),
      async (id, _value, _labels, ttl) => {
        puts.push({ id, ttl });
      },
    );

    expect(env.map((e) => e.name)).toEqual(['RW_TASK', 'RW_RUN_ID', 'KUBECONFIG', 'RW_SECRET_0']);
    expect(env[3]?.valueSource).toEqual({
      secretKeyRef: { secret: 'projects/p/secrets/db-admin', version: '3' },
    });
    expect(env[2]?.valueSource).toEqual({ secretKeyRef: { secret: `${JOB}-KUBECONFIG`, version: 'latest' } });
    expect(puts).toEqual([{ id: `${JOB}-KUBECONFIG`, ttl: 600 + 86_400 }]);
    expect(JSON.stringify(env)).not.toContain('minted-canary');
  });

  it('refuses a spec too large for an env value, a bad env name, and a secret nothing provides', async () => {
    const put = async () => {};
    const big = prepared({
      extraVars: { blob: 'x'.repeat(CLOUD_RUN_ENV_VALUE_MAX_BYTES) },
    } as Partial<TaskSpec>);

    await expect(jobEnvironment(run(), JOB, big, put)).rejects.toThrow(
      /task spec too large for a Cloud Run env value/,
    );
    await expect(
      jobEnvironment(run(), JOB, prepared({}, { secretEnv: { 'BAD-NAME': 'x' } }), put),
    ).rejects.toThrow(LaunchRejectedError);
    await expect(
      jobEnvironment(run(), JOB, prepared({}, { secretEnv: { RW_TASK: 'x' } }), put),
    ).rejects.toThrow('Secret env name RW_TASK cannot be used in a Cloud Run container');
    await expect(
      jobEnvironment(run(), JOB, prepared({ secretEnvNames: ['RW_SECRET_7'] }), put),
    ).rejects.toThrow(/names secret env RW_SECRET_7, but neither a stored secret nor a value was prepared/);
  });
});
