import { describe, it, expect } from 'vitest';
import { RETRY_AFTER_MIN_MS, clampRetryAfter, parseRetryAfter } from '../../../src/policy/retry-after.js';

const NOW = Date.parse('2025-01-01T00:00:00.000Z');

describe('parseRetryAfter: delta-seconds', () => {
  it.each([
    ['0', 0],
    ['1', 1_000],
    ['120', 120_000],
    [' 30 ', 30_000],
    ['007', 7_000],
  ])('reads %j as %i ms', (value, ms) => {
    expect(parseRetryAfter(value, NOW)).toBe(ms);
  });

  it('does not depend on the clock', () => {
    expect(parseRetryAfter('5', 0)).toBe(5_000);
    expect(parseRetryAfter('5', NOW)).toBe(5_000);
  });
});

describe('parseRetryAfter: HTTP date', () => {
  it('reads an IMF-fixdate as the time from now', () => {
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', NOW)).toBe(30_000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 01:00:00 GMT', NOW)).toBe(3_600_000);
  });

  it('measures from the injected now', () => {
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', NOW + 10_000)).toBe(20_000);
  });

  it('reads the obsolete RFC 850 format', () => {
    expect(parseRetryAfter('Wednesday, 01-Jan-25 00:01:00 GMT', NOW)).toBe(60_000);
  });

  it('treats a date in the past or exactly now as 0', () => {
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', NOW)).toBe(0);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:00 GMT', NOW)).toBe(0);
  });
});

describe('parseRetryAfter: absent or unreadable', () => {
  it('returns undefined when the header is absent', () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
  });

  it.each(['', '   ', '-5', '1.5', '1e3', '+5', '12abc', 'soon', 'tomorrow', 'abc', 'NaN', 'Infinity', '30 seconds', 'x2'])(
    'returns undefined for %j',
    (value) => {
      expect(parseRetryAfter(value, NOW)).toBeUndefined();
    },
  );

  // V8's lenient Date.parse reads these as dates in 2001-2010; they must fall back to the schedule.
  it.each(['retry later 5', 'Mon 5', 'next 10', 'a 1'])('returns undefined for the date-like garbage %j', (value) => {
    expect(parseRetryAfter(value, NOW)).toBeUndefined();
  });
});

describe('clampRetryAfter', () => {
  it('has a 1 s lower bound', () => {
    expect(RETRY_AFTER_MIN_MS).toBe(1_000);
    expect(clampRetryAfter(0, 60_000)).toBe(1_000);
    expect(clampRetryAfter(999, 60_000)).toBe(1_000);
  });

  it('keeps a value inside [1 s, max]', () => {
    expect(clampRetryAfter(1_000, 60_000)).toBe(1_000);
    expect(clampRetryAfter(30_000, 60_000)).toBe(30_000);
    expect(clampRetryAfter(60_000, 60_000)).toBe(60_000);
  });

  it('clamps to the maximum', () => {
    expect(clampRetryAfter(60_001, 60_000)).toBe(60_000);
    expect(clampRetryAfter(Number.POSITIVE_INFINITY, 60_000)).toBe(60_000);
    expect(clampRetryAfter(parseRetryAfter('9'.repeat(30), NOW) as number, 21_600_000)).toBe(21_600_000);
  });

  it('never goes below 1 s even when the maximum is smaller', () => {
    expect(clampRetryAfter(5_000, 500)).toBe(1_000);
    expect(clampRetryAfter(0, 0)).toBe(1_000);
  });
});
