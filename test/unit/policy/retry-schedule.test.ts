import { describe, it, expect } from 'vitest';
import { delayWithinSchedule, hasAttemptsLeft, scheduledDelay } from '../../../src/policy/retry-schedule.js';

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

describe('delayWithinSchedule', () => {
  it('keeps the delay of a callback held less than the rest of its schedule', () => {
    expect(delayWithinSchedule(16_000, 5_000, 0)).toBe(16_000);
    expect(delayWithinSchedule(16_000, 5_000, 5_000)).toBe(16_000);
  });

  it("brings a retry back at its schedule's end when it was held longer than the rest", () => {
    // 16 s delay, 5 s left from the retry's attempt on, held 12 s: the schedule ends 9 s from now.
    expect(delayWithinSchedule(16_000, 5_000, 12_000)).toBe(9_000);
  });

  it('never goes below 0, nor before ISOLATION=off would make the attempt', () => {
    expect(delayWithinSchedule(16_000, 5_000, 60_000)).toBe(0);
    for (const [delay, left, held] of [
      [2_000, 0, 1_000],
      [16_000, 5_000, 12_000],
      [8_000, 21_000, 40_000],
    ] as const) {
      expect(delayWithinSchedule(delay, left, held)).toBeGreaterThanOrEqual(Math.max(0, delay - held));
    }
  });
});
