import { describe, expect, it } from 'vitest';
import { lazyClient } from '../../../shared/composition/lazy-client.ts';

class FakeClient {
  static made = 0;
  readonly region = 'eu-west-1';
  constructor() {
    FakeClient.made += 1;
  }
  async send(command: string): Promise<string> {
    return `${this.region}:${command}`;
  }
}

describe('lazyClient', () => {
  it('makes the client on its first use, once, with its methods bound to it', async () => {
    FakeClient.made = 0;
    const client = lazyClient(() => new FakeClient());
    expect(FakeClient.made).toBe(0);

    const { send } = client;
    expect(await send('GetItem')).toBe('eu-west-1:GetItem');
    expect(await client.send('PutItem')).toBe('eu-west-1:PutItem');
    expect(client.region).toBe('eu-west-1');
    expect(FakeClient.made).toBe(1);
  });
});
