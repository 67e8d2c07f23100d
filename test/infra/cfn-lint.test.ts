import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { synth, withDomain } from './synth.ts';

/*
 * cfn-lint 1.x (AWS's CloudFormation linter, on the machine's Python; .ci/run
 * installs it when missing) over the templates `cdk synth -c env=dev|prod`
 * produces. It is run through its Python entry point with the same `python3`
 * as moto: `python3 -m cfnlint` does not work (the package has no __main__).
 */

/**
 * Ignored, with the reason: W3005 ("dependency already enforced by a GetAtt")
 * fires once per Lambda function. CDK writes `DependsOn: [<role>DefaultPolicy,
 * <role>]` on every function, so the policy exists before the function's first
 * invocation; the role entry is redundant with the function's `GetAtt` on the
 * role, which is what W3005 reports. CDK generates it (aws-lambda Function),
 * our code cannot drop it, and it is harmless.
 */
const IGNORED = ['W3005'];

const work = mkdtempSync(join(tmpdir(), 'rw-cfn-lint-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Finding {
  readonly Filename: string;
  readonly Rule: { readonly Id: string };
  readonly Message: string;
  readonly Location: { readonly Path: readonly (string | number)[] };
}

/** One cfn-lint process for several templates (its start-up, loading the resource schemas, is most of the time). */
function cfnLint(templates: Readonly<Record<string, unknown>>): {
  status: number | null;
  findings: Finding[];
  stderr: string;
} {
  const files = Object.entries(templates).map(([name, template]) => {
    const file = join(work, `${name}.json`);
    writeFileSync(file, JSON.stringify(template));
    return file;
  });
  const run = spawnSync(
    'python3',
    [
      '-c',
      'import sys; from cfnlint.runner import main; sys.exit(main())',
      '--format',
      'json',
      '--ignore-checks',
      ...IGNORED,
      '--',
      ...files,
    ],
    { encoding: 'utf8', timeout: 180_000 },
  );
  const findings = run.stdout.trim() === '' ? [] : (JSON.parse(run.stdout) as Finding[]);
  return { status: run.status, findings, stderr: run.stderr };
}

const summary = (findings: readonly Finding[]) =>
  findings.map((f) => `${f.Filename}: ${f.Rule.Id} ${f.Location.Path.join('/')}: ${f.Message}`);

describe('cfn-lint', () => {
  it('passes on the dev and prod templates, and prod with the console on a custom domain', () => {
    const templates = {
      dev: synth('dev').template.toJSON(),
      prod: synth('prod').template.toJSON(),
      'prod-console-domain': synth('prod', withDomain()).template.toJSON(),
    };

    const result = cfnLint(templates);

    expect(result.stderr).toBe('');
    expect(summary(result.findings)).toEqual([]);
    expect(result.status).toBe(0);
  }, 240_000);

  it('reports a broken template, so a clean answer above means something', () => {
    const result = cfnLint({
      broken: {
        Resources: {
          Queue: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 'soon' } },
          Missing: { Type: 'AWS::SQS::Queue', DependsOn: 'NoSuchResource' },
        },
      },
    });

    expect(result.status).not.toBe(0);
    expect(result.findings.map((f) => f.Rule.Id)).toEqual(expect.arrayContaining(['E3012', 'E3005']));
  }, 60_000);
});
