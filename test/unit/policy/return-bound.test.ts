import { describe, expect, it } from 'vitest';
import { MAX_RETURNS, MAX_RETURN_DELAY_MS, nextReturn } from '../../../src/policy/return-bound.js';

describe('nextReturn: the bound on sending a message back to its queue', () => {
  it('waits twice as long each time, capped, then parks after MAX_RETURNS returns', () => {
    const steps = Array.from({ length: MAX_RETURNS + 1 }, (_, sofar) => nextReturn(sofar));
    expect(steps).toEqual([
      { kind: 'return', returns: 1, delayMs: 1_000 },
      { kind: 'return', returns: 2, delayMs: 2_000 },
      { kind: 'return', returns: 3, delayMs: 4_000 },
      { kind: 'return', returns: 4, delayMs: 8_000 },
      { kind: 'return', returns: 5, delayMs: MAX_RETURN_DELAY_MS },
      { kind: 'park', returns: 6 },
    ]);
  });

  it('a count past the bound (a copy from elsewhere) parks at once', () => {
    expect(nextReturn(1_000)).toEqual({ kind: 'park', returns: 1_001 });
  });
});
