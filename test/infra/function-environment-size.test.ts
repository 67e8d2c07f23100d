import { Token } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import {
  environmentSize,
  environmentSizeProblem,
  LAMBDA_ENVIRONMENT_LIMIT_BYTES,
  REFERENCE_BYTES_ESTIMATE,
} from '../../infra/function-environment.ts';
import { cdkContext, synth } from './synth.ts';

/*
 * Lambda's 4 KB environment limit, checked at synth (infra/function-environment.ts
 * environmentSizeProblem, wired in infra/stacks/control-plane-stack.ts): Lambda
 * itself says so only when CloudFormation deploys the functions.
 */

/** cdk.json's dev with `settings` added to its own. */
function devWith(settings: Record<string, unknown>): Record<string, unknown> {
  const environments = cdkContext().environments as Record<string, Record<string, any>>;
  const dev = environments.dev ?? {};
  return { environments: { ...environments, dev: { ...dev, settings: { ...dev.settings, ...settings } } } };
}

/** `count` distinct CIDRs: a setting an operator can make as long as they like. */
const cidrs = (count: number) => Array.from({ length: count }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);

const ref = (logicalId: string) => Token.asString({ Ref: logicalId });

describe('environmentSize', () => {
  it('is the JSON text of the variables in UTF-8 bytes, as Lambda measures it, when nothing is a reference', () => {
    const env = { LOG_LEVEL: 'INFO', NOTE: 'naïve "quoted"' };

    const size = environmentSize(env);

    expect(size).toEqual({
      knownBytes: Buffer.byteLength(JSON.stringify(env)),
      references: 0,
      byVariable: [
        { name: 'NOTE', bytes: Buffer.byteLength('"NOTE":"naïve \\"quoted\\"",') },
        { name: 'LOG_LEVEL', bytes: '"LOG_LEVEL":"INFO",'.length },
      ],
    });
  });

  it('leaves references out of the bytes and counts them, wherever they sit in a value', () => {
    const size = environmentSize({
      QUEUE: `https://sqs/${ref('Queue')}/x${ref('Other')}`,
      TABLE: ref('Table'),
    });

    expect(size.references).toBe(3);
    expect(size.knownBytes).toBe(JSON.stringify({ QUEUE: 'https://sqs//x', TABLE: '' }).length);
  });
});

describe('environmentSizeProblem', () => {
  const WHERE = "cdk.json's environments.dev.settings";
  const padded = (bytes: number, references = 0) => {
    const env: Record<string, string> = { PAD: '' };
    for (let i = 0; i < references; i++) env[`R${i}`] = ref(`Thing${i}`);
    env.PAD = 'x'.repeat(bytes - environmentSize(env).knownBytes);
    return env;
  };

  it('is nothing up to the limit with no references', () => {
    const env = padded(LAMBDA_ENVIRONMENT_LIMIT_BYTES);
    expect(environmentSize(env).knownBytes).toBe(LAMBDA_ENVIRONMENT_LIMIT_BYTES);
    expect(environmentSizeProblem(env, WHERE)).toBeUndefined();
  });

  it('is an error one byte over, naming the sizes and the largest variables but no value', () => {
    const problem = environmentSizeProblem({ ...padded(LAMBDA_ENVIRONMENT_LIMIT_BYTES + 1) }, WHERE);

    expect(problem?.level).toBe('error');
    expect(problem?.message).toContain("is 4,097 bytes before its 0 references to the stack's resources");
    expect(problem?.message).toContain("over Lambda's limit of 4,096");
    expect(problem?.message).toContain(
      `Shorten or remove settings in ${WHERE}. Largest variables (bytes): PAD 4,096.`,
    );
    expect(problem?.message).not.toContain('xxx');
  });

  it('is a warning when the references, at their estimate, would take it over', () => {
    const underBy = (references: number) =>
      LAMBDA_ENVIRONMENT_LIMIT_BYTES - references * REFERENCE_BYTES_ESTIMATE;

    expect(environmentSizeProblem(padded(underBy(7), 7), WHERE)).toBeUndefined();
    expect(environmentSizeProblem(padded(underBy(7) + 1, 7), WHERE)?.level).toBe('warning');
    expect(environmentSizeProblem(padded(underBy(7) + 1, 7), WHERE)?.message).toContain(
      `plus 7 references to the stack's resources, filled in at deploy: about 4,097 bytes`,
    );
  });
});

describe('the stack', () => {
  const sizeWarnings = (stack: Parameters<typeof Annotations.fromStack>[0]) =>
    Annotations.fromStack(stack).findWarning('*', Match.stringLikeRegexp("functions' environment"));

  // cdk.json's own environments leave no warning at all: control-plane-stack.test.ts, 'leaves no CDK warning'.
  it('refuses at synth settings that take the functions’ environment over Lambda’s limit', () => {
    expect(() => synth('dev', devWith({ portainer_allowed_source_cidrs: cidrs(300) }))).toThrow(
      /functions' environment is [\d,]+ bytes before its 7 references .* over Lambda's limit of 4,096 .*environments\.dev\.settings\. Largest variables \(bytes\): REMOTE_WORKER_SETTINGS/,
    );
  });

  it('warns at synth when only the references, filled in at deploy, would take it over', () => {
    const { stack } = synth('dev', devWith({ portainer_allowed_source_cidrs: cidrs(140) }));

    const warnings = sizeWarnings(stack);
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings[0]?.entry.data)).toContain('plus 7 references');
    expect(JSON.stringify(warnings[0]?.entry.data)).not.toContain('10.0.1.0/24');
  });
});
