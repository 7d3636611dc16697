import { describe, it, expect } from 'vitest';
import type { DeliveryOutcome } from '../../../src/policy/classify-outcome.js';
import type { RetryPolicy } from '../../../src/policy/decide.js';
import { heldRetry, RAN_OUT, verdictOf, type Verdict } from '../../../src/policy/verdict.js';
import type { CallbackState, ScheduleRules } from '../../../src/policy/schedule-end.js';
import type { Random } from '../../../src/policy/jitter.js';

const NOW = Date.parse('2025-01-01T00:10:00.000Z');
const STARTED = Date.parse('2025-01-01T00:09:59.000Z');
const STARTED_ISO = '2025-01-01T00:09:59.000Z';
const FIRST_ISO = '2025-01-01T00:00:00.000Z';

const policy: RetryPolicy = { schedule: [1_000, 2_000], maxAttempts: 3, jitter: 0.1, retryAfterMaxMs: 60_000, successBody: '' };

const delivery = (attempt: number, firstAttemptAt?: string): CallbackState => ({ id: 'cb-1', attempt, firstAttemptAt });

const outcome = (fields: Partial<DeliveryOutcome>): DeliveryOutcome => ({ durationMs: 12, ...fields });

/** Decides as the pipeline does: the clock read once per decision. */
const createDecider =
  (retry: RetryPolicy, clock: () => number, random: Random) => (d: CallbackState, o: DeliveryOutcome, startedAt: number) =>
    verdictOf(d, o, startedAt, retry, clock(), random);

describe('verdictOf', () => {
  const decideAt = createDecider(
    policy,
    () => NOW,
    () => 0.5,
  );

  it('acks a success and records the attempt without an error', () => {
    expect(decideAt(delivery(1), outcome({ status: 200 }), STARTED)).toEqual({
      decision: { kind: 'ack' },
      record: { id: 'cb-1', attempts: 1, firstAttemptAt: STARTED_ISO, lastAttemptAt: STARTED_ISO, lastStatus: 200, lastError: undefined },
    });
  });

  it('uses the attempt start as the first attempt time on attempt 1', () => {
    expect(decideAt(delivery(1), outcome({ status: 503 }), STARTED).record.firstAttemptAt).toBe(STARTED_ISO);
  });

  it('preserves the first attempt time carried by the delivery', () => {
    const { record } = decideAt(delivery(2, FIRST_ISO), outcome({ status: 503 }), STARTED);
    expect(record.firstAttemptAt).toBe(FIRST_ISO);
    expect(record.lastAttemptAt).toBe(STARTED_ISO);
    expect(record.attempts).toBe(2);
  });

  it('records the reason as lastError when there is no network error', () => {
    expect(decideAt(delivery(1), outcome({ status: 503 }), STARTED)).toEqual({
      decision: { kind: 'retry', delayMs: 1_000, attempt: 2, why: 'HTTP 503' },
      record: { id: 'cb-1', attempts: 1, firstAttemptAt: STARTED_ISO, lastAttemptAt: STARTED_ISO, lastStatus: 503, lastError: 'HTTP 503' },
    });
    expect(decideAt(delivery(1), outcome({ status: 404 }), STARTED).record.lastError).toBe('HTTP 404');
  });

  it('records the network error as lastError, with no status', () => {
    const { decision, record } = decideAt(delivery(1), outcome({ error: 'ECONNREFUSED: refused' }), STARTED);
    expect(decision).toEqual({ kind: 'retry', delayMs: 1_000, attempt: 2, why: 'ECONNREFUSED: refused' });
    expect(record.lastError).toBe('ECONNREFUSED: refused');
    expect(record.lastStatus).toBeUndefined();
  });

  it('dead-letters the last attempt as exhausted', () => {
    const { decision, record } = decideAt(delivery(3, FIRST_ISO), outcome({ status: 500 }), STARTED);
    expect(decision).toEqual({ kind: 'dead', reason: 'exhausted', why: 'HTTP 500' });
    expect(record).toEqual({
      id: 'cb-1',
      attempts: 3,
      firstAttemptAt: FIRST_ISO,
      lastAttemptAt: STARTED_ISO,
      lastStatus: 500,
      lastError: 'HTTP 500',
    });
  });

  it('reads Retry-After dates against the injected clock, not the attempt start', () => {
    const { decision } = decideAt(delivery(1), outcome({ status: 429, retryAfter: 'Wed, 01 Jan 2025 00:10:30 GMT' }), STARTED);
    expect(decision).toEqual({ kind: 'retry', delayMs: 30_000, attempt: 2, why: 'HTTP 429' });
  });

  it('calls the clock once per decision', () => {
    let calls = 0;
    const counted = createDecider(
      policy,
      () => {
        calls += 1;
        return NOW;
      },
      () => 0.5,
    );
    counted(delivery(1), outcome({ status: 500 }), STARTED);
    counted(delivery(2), outcome({ status: 200 }), STARTED);
    expect(calls).toBe(2);
  });

  it('applies jitter from the injected random source', () => {
    const low = createDecider(
      policy,
      () => NOW,
      () => 0,
    );
    const high = createDecider(
      policy,
      () => NOW,
      () => 0.999_999_9,
    );
    expect(low(delivery(2), outcome({ status: 500 }), STARTED).decision).toMatchObject({ delayMs: 1_800 });
    expect(high(delivery(2), outcome({ status: 500 }), STARTED).decision).toMatchObject({ delayMs: 2_200 });
  });

  it('records the success-body mismatch as lastError', () => {
    const strict = createDecider(
      { ...policy, successBody: 'success' },
      () => NOW,
      () => 0.5,
    );
    const { record } = strict(delivery(1), outcome({ status: 200, body: 'nope' }), STARTED);
    expect(record.lastError).toBe('HTTP 200 without the expected success body');
    expect(record.lastStatus).toBe(200);
  });

  it("a callback with a policy is decided by it, and the record carries it for the copy's headers", () => {
    const payment = { name: 'payment', retry: { ...policy, schedule: [7_000], maxAttempts: 5, jitter: 0 }, timeoutMs: 5_000 };
    const { decision, record } = decideAt({ ...delivery(3, FIRST_ISO), policy: payment }, outcome({ status: 500 }), STARTED);
    expect(decision).toEqual({ kind: 'retry', delayMs: 7_000, attempt: 4, why: 'HTTP 500' });
    expect(record.policy).toBe(payment);
    // The worker's own policy (3 attempts) would have given up here.
    expect(decideAt(delivery(3, FIRST_ISO), outcome({ status: 500 }), STARTED).decision.kind).toBe('dead');
  });
});

describe('verdictOf: holds', () => {
  it('records what circuits held the callback, this attempt included', () => {
    const held = { ...delivery(2, FIRST_ISO), heldMs: 5_000, heldSince: STARTED - 3_000 };
    expect(verdictOf(held, outcome({ status: 500 }), STARTED, policy, NOW, () => 0.5).record.heldMs).toBe(8_000);
    expect(verdictOf(delivery(2, FIRST_ISO), outcome({ status: 500 }), STARTED, policy, NOW, () => 0.5).record.heldMs).toBeUndefined();
  });
});

describe('heldRetry', () => {
  // Every attempt of 1 s; delays of 1 s then 2 s; 3 attempts.
  const noJitter: RetryPolicy = { ...policy, jitter: 0 };
  const retry = (delayMs: number, heldMs: number | undefined): Verdict => ({
    decision: { kind: 'retry', delayMs, attempt: 2, why: 'HTTP 500' },
    record: {
      id: 'cb-1',
      attempts: 1,
      firstAttemptAt: FIRST_ISO,
      lastAttemptAt: STARTED_ISO,
      lastStatus: 500,
      lastError: 'HTTP 500',
      heldMs,
    },
  });
  const rules = (failing: boolean): ScheduleRules => ({ retry: noJitter, timeoutMs: 1_000, failedThroughout: () => failing });

  it('leaves a verdict alone when circuits never held the callback, or it is no retry', () => {
    const verdict = retry(1_000, undefined);
    expect(heldRetry('t', delivery(1), verdict, rules(true), NOW)).toBe(verdict);
    const dead: Verdict = { ...verdict, decision: { kind: 'dead', reason: 'exhausted', why: 'x' } };
    expect(heldRetry('t', delivery(1), dead, rules(true), NOW)).toBe(dead);
  });

  it('keeps the delay of a retry whose schedule has time left', () => {
    const verdict = retry(1_000, 500);
    expect(heldRetry('t', delivery(1), verdict, rules(true), NOW)).toBe(verdict);
  });

  it('brings back a retry held past its schedule by that end, while its target is not failing throughout', () => {
    // From attempt 2 on: 1 s + 2 s + 1 s = 4 s left; held 4.5 s: the end is 1 s + 4 s - 4.5 s = 0.5 s away.
    const { decision } = heldRetry('t', delivery(1), retry(1_000, 4_500), rules(false), NOW);
    expect(decision).toEqual({ kind: 'retry', delayMs: 500, attempt: 2, why: 'HTTP 500' });
  });

  it("parks a retry due after its schedule's end, its target failing throughout", () => {
    const asked: unknown[] = [];
    const failing: ScheduleRules = { ...rules(true), failedThroughout: (...args) => (asked.push(args), true) };
    const verdict = heldRetry('t', delivery(1), retry(1_000, 6_000), failing, NOW);
    expect(verdict.decision).toEqual({ kind: 'dead', reason: 'exhausted', why: RAN_OUT });
    expect(verdict.record.lastError).toBe(RAN_OUT);
    // The end: 1 s + 4 s - 6 s = 1 s ago; it began 4 s before that, its last attempt a timeout before it.
    expect(asked).toEqual([['t', NOW - 5_000, NOW - 2_000, { from: 2, to: 3 }]]);
  });

  it('asks nothing of a scheduler that watches no target (ISOLATION=off)', () => {
    const off: ScheduleRules = { retry: noJitter, timeoutMs: 1_000 };
    expect(heldRetry('t', delivery(1), retry(1_000, 6_000), off, NOW).decision).toEqual({
      kind: 'retry',
      delayMs: 0,
      attempt: 2,
      why: 'HTTP 500',
    });
  });
});
