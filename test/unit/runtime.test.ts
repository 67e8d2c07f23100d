import { describe, expect, it } from 'vitest';
import { LAMBDA_NODE_TARGET } from '../../infra/bundling.js';

describe('the runtime the suite runs on', () => {
  it('is the Node.js major the Lambda functions target (the one npm install brings)', () => {
    const lambdaMajor = Number(/^node(\d+)$/.exec(LAMBDA_NODE_TARGET)?.[1]);

    expect(lambdaMajor).toBeGreaterThanOrEqual(22);
    expect(Number(process.versions.node.split('.')[0])).toBe(lambdaMajor);
  });
});
