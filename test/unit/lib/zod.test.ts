import { describe, expect, it } from 'vitest';
import * as classic from 'zod';
import * as z from '../../../shared/lib/zod.ts';

const messages = (issues: readonly { message: string }[] | undefined) => issues?.map((i) => i.message);
const input = { port: 0, name: 'x' };
const mini = () => z.object({ port: z.int().check(z.minimum(1)), name: z.string().check(z.minLength(2)) });

// Classic zod installs its English messages on its first schema, into the core mini shares: these tests
// build none before the first has parsed, so they see mini's own configuration.
describe('shared/lib/zod', () => {
  it('gives zod’s English messages, not "Invalid input"', () => {
    expect(messages(mini().safeParse(input).error?.issues)).toEqual([
      'Too small: expected number to be >=1',
      'Too small: expected string to have >=2 characters',
    ]);
    expect(z.string().safeParse(3).error?.issues[0]?.message).toBe(
      'Invalid input: expected string, received number',
    );
  });

  it('gives the messages classic zod gives', () => {
    const full = classic.object({ port: classic.int().min(1), name: classic.string().min(2) });
    expect(messages(mini().safeParse(input).error?.issues)).toEqual(
      messages(full.safeParse(input).error?.issues),
    );
  });

  it('textBetween bounds a string’s length on both sides', () => {
    const name = z.textBetween(1, 3);
    expect(name.safeParse('abc').success).toBe(true);
    expect(messages(name.safeParse('').error?.issues)).toEqual([
      'Too small: expected string to have >=1 characters',
    ]);
    expect(messages(name.safeParse('abcd').error?.issues)).toEqual([
      'Too big: expected string to have <=3 characters',
    ]);
  });
});
