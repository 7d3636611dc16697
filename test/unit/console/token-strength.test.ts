import { describe, expect, it } from 'vitest';
import { TOKEN_RULE, tokenBits, weakTokenProblem } from '../../../src/console/token-strength.js';

describe('console token strength', () => {
  it.each([
    ['short-token-0123456', '19 characters'],
    ['local-console-token-change-me', 'a placeholder word'],
    ['my-example-0123456789ABCDEFGH', 'a placeholder word'],
    ['abababababababababababababababab', '2 different characters'],
    ['012345678901234567890123456789012345', 'about 119 bits'],
  ])('refuses %j (%s)', (token, problem) => {
    expect(weakTokenProblem(token)).toBe(problem);
  });

  it.each([
    ['32 hex characters (openssl rand -hex 16)', '9f86d081884c7d659a2feaa0c55ad015'],
    ['base64 of 24 random bytes', 'q3Lk+9vZ2mX4/B8nW3pL6sD1aR7tY0uE'],
    ['24 mixed characters', 'alice-Tk7-q9Zr2mX4vB8nW3'],
  ])('accepts %s', (_what, token) => {
    expect(weakTokenProblem(token)).toBeUndefined();
    expect(tokenBits(token)).toBeGreaterThanOrEqual(128);
  });

  it('the rule states its numbers', () => {
    expect(TOKEN_RULE).toContain('24 characters');
    expect(TOKEN_RULE).toContain('128 bits');
  });
});
