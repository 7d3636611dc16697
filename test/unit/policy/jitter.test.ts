import { describe, it, expect } from 'vitest';
import { applyJitter } from '../../../src/policy/jitter.js';
import { mulberry32 } from '../../support/prng.js';

const ALMOST_ONE = 1 - Number.EPSILON;

describe('applyJitter', () => {
  it('returns the lower bound when random() is 0', () => {
    expect(applyJitter(10_000, 0.1, () => 0)).toBe(9_000);
  });

  it('returns the delay unchanged when random() is 0.5', () => {
    expect(applyJitter(10_000, 0.1, () => 0.5)).toBe(10_000);
  });

  it('approaches the upper bound as random() approaches 1', () => {
    expect(applyJitter(10_000, 0.1, () => 0.999_999)).toBe(11_000);
    expect(applyJitter(10_000, 0.1, () => ALMOST_ONE)).toBe(11_000);
  });

  it('rounds to whole milliseconds', () => {
    expect(applyJitter(15, 0.1, () => 0.75)).toBe(16);
    expect(applyJitter(15, 0.1, () => 0.25)).toBe(14);
    expect(applyJitter(1_001, 0.5, () => 0)).toBe(501);
    expect(Number.isInteger(applyJitter(12_345, 0.1, () => 0.123))).toBe(true);
  });

  it('returns the delay unchanged and does not draw when the fraction is 0 or negative', () => {
    const never = (): number => {
      throw new Error('random() must not be called');
    };
    expect(applyJitter(10_000, 0, never)).toBe(10_000);
    expect(applyJitter(10_000, -0.5, never)).toBe(10_000);
  });

  it('never goes below 0, even with a full spread', () => {
    expect(applyJitter(10_000, 1, () => 0)).toBe(0);
    expect(applyJitter(10_000, 1, () => ALMOST_ONE)).toBe(20_000);
  });

  it('stays within ±fraction for many seeded draws and spreads over the range', () => {
    const random = mulberry32(42);
    let below = 0;
    let above = 0;
    for (let i = 0; i < 2_000; i += 1) {
      const delay = applyJitter(60_000, 0.1, random);
      expect(delay).toBeGreaterThanOrEqual(54_000);
      expect(delay).toBeLessThanOrEqual(66_000);
      if (delay < 57_000) below += 1;
      if (delay > 63_000) above += 1;
    }
    expect(below).toBeGreaterThan(300);
    expect(above).toBeGreaterThan(300);
  });
});
