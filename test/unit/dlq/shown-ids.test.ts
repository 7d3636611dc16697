import { describe, expect, it } from 'vitest';
import { ShownIds } from '../../../src/dlq/take-shown.js';

describe('ShownIds', () => {
  it('finds each shown message once, a repeated id as many times as shown', () => {
    const shown = new ShownIds(['a', 'b', 'a']);
    expect(shown.remaining).toBe(3);
    expect(shown.take('c')).toBe(false);
    expect(shown.take(null)).toBe(false);
    expect(shown.take('a')).toBe(true);
    expect(shown.take('a')).toBe(true);
    expect(shown.take('a')).toBe(false);
    expect(shown.remaining).toBe(1);
    expect(shown.take('b')).toBe(true);
    expect(shown.remaining).toBe(0);
  });
});
