import { describe, it, expect } from 'vitest';
import { hasAttemptsLeft, scheduledDelay } from '../../../src/policy/retry-schedule.js';

const SCHEDULE = [1_000, 2_000, 4_000] as const;

describe('scheduledDelay', () => {
  it('uses entry i before attempt i + 2', () => {
    expect(scheduledDelay(SCHEDULE, 1)).toBe(1_000);
    expect(scheduledDelay(SCHEDULE, 2)).toBe(2_000);
    expect(scheduledDelay(SCHEDULE, 3)).toBe(4_000);
  });

  it('repeats the last entry past the end of the schedule', () => {
    for (const attempt of [4, 5, 10, 1_000]) expect(scheduledDelay(SCHEDULE, attempt)).toBe(4_000);
  });

  it('works with a single-entry schedule', () => {
    expect(scheduledDelay([500], 1)).toBe(500);
    expect(scheduledDelay([500], 7)).toBe(500);
  });

  it('rejects an empty schedule', () => {
    expect(() => scheduledDelay([], 1)).toThrow(RangeError);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('rejects attempt %s', (attempt) => {
    expect(() => scheduledDelay(SCHEDULE, attempt)).toThrow(RangeError);
  });
});

describe('hasAttemptsLeft', () => {
  it('allows another attempt while fewer than maxAttempts were made', () => {
    expect(hasAttemptsLeft(1, 16)).toBe(true);
    expect(hasAttemptsLeft(15, 16)).toBe(true);
  });

  it('stops at maxAttempts', () => {
    expect(hasAttemptsLeft(16, 16)).toBe(false);
    expect(hasAttemptsLeft(17, 16)).toBe(false);
  });

  it('never retries when maxAttempts is 1', () => {
    expect(hasAttemptsLeft(1, 1)).toBe(false);
  });
});
