import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../../src/policy/decide.js';
import {
  failedThroughout,
  ranOut,
  retryOf,
  scheduleOf,
  timeoutOf,
  type CallbackState,
  type ScheduleRules,
} from '../../../src/policy/schedule-end.js';

const NOW = Date.parse('2025-01-01T00:10:00.000Z');

// Attempts of 1 s each; delays of 1 s then 2 s; 3 attempts: from attempt 1, 1 + 1 + 1 + 2 + 1 = 6 s.
const retry: RetryPolicy = { schedule: [1_000, 2_000], maxAttempts: 3, jitter: 0, retryAfterMaxMs: 60_000, successBody: '' };
const state = (fields: Partial<CallbackState> = {}): CallbackState => ({ id: 'cb-1', attempt: 1, firstAttemptAt: undefined, ...fields });

/** Rules whose scheduler answers `failing`, recording what it was asked. */
function rulesAnswering(failing: boolean) {
  const asked: unknown[][] = [];
  const rules: ScheduleRules = { retry, timeoutMs: 1_000, failedThroughout: (...args) => (asked.push(args), failing) };
  return { rules, asked };
}

describe("a callback's own policy or the worker's", () => {
  it("follows a named policy, else the worker's defaults", () => {
    const payment = { name: 'payment', retry: { ...retry, maxAttempts: 5 }, timeoutMs: 5_000 };
    expect(timeoutOf(state(), { retry, timeoutMs: 1_000 })).toBe(1_000);
    expect(timeoutOf(state({ policy: payment }), { retry, timeoutMs: 1_000 })).toBe(5_000);
    expect(retryOf(state({ policy: payment }), { retry, timeoutMs: 1_000 })).toBe(payment.retry);
  });
});

describe('scheduleOf', () => {
  it('is the rest of the schedule from the attempt due, every attempt timing out, and what circuits held', () => {
    expect(scheduleOf(state(), { retry, timeoutMs: 1_000 })).toEqual({ leftMs: 6_000, heldMs: 0 });
    expect(scheduleOf(state({ attempt: 3, heldMs: 700 }), { retry, timeoutMs: 1_000 })).toEqual({ leftMs: 1_000, heldMs: 700 });
  });
});

describe('failedThroughout', () => {
  it('asks the scheduler only once the end has passed, about the rest of the schedule and the attempts left', () => {
    const { rules, asked } = rulesAnswering(true);
    expect(failedThroughout('t', state({ attempt: 2 }), rules, NOW, NOW + 1, 4_000)).toBe(false);
    expect(asked).toEqual([]);
    expect(failedThroughout('t', state({ attempt: 2 }), rules, NOW, NOW, 4_000)).toBe(true);
    expect(asked).toEqual([['t', NOW - 4_000, NOW - 1_000, { from: 2, to: 3 }]]);
  });

  it('is false where the scheduler saw an answer, or watches no target', () => {
    expect(failedThroughout('t', state(), rulesAnswering(false).rules, NOW, NOW, 6_000)).toBe(false);
    expect(failedThroughout('t', state(), { retry, timeoutMs: 1_000 }, NOW, NOW, 6_000)).toBe(false);
  });
});

describe('ranOut', () => {
  it('is false for a callback no circuit ever held, without asking', () => {
    const { rules, asked } = rulesAnswering(true);
    expect(ranOut('t', state(), rules, NOW)).toBe(false);
    expect(asked).toEqual([]);
  });

  it('counts the schedule from when a held attempt came due, less what earlier holds took', () => {
    const { rules, asked } = rulesAnswering(true);
    // Attempt 2 came due 3.5 s ago, earlier holds took 0.5 s: its 4 s ended just now.
    expect(ranOut('t', state({ attempt: 2, heldSince: NOW - 3_500, heldMs: 500 }), rules, NOW)).toBe(true);
    expect(asked).toEqual([['t', NOW - 4_000, NOW - 1_000, { from: 2, to: 3 }]]);
    expect(ranOut('t', state({ attempt: 2, heldSince: NOW - 3_000, heldMs: 500 }), rules, NOW)).toBe(false);
  });

  it("takes a hold stamped in the future (another host's clock) as starting now", () => {
    const { rules } = rulesAnswering(true);
    expect(ranOut('t', state({ attempt: 3, heldSince: NOW + 60_000, heldMs: 1_000 }), rules, NOW)).toBe(true);
    expect(ranOut('t', state({ attempt: 3, heldSince: NOW + 60_000, heldMs: 999 }), rules, NOW)).toBe(false);
  });
});
