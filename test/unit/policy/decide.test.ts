import { describe, it, expect } from 'vitest';
import type { DeliveryOutcome } from '../../../src/policy/classify-outcome.js';
import { decide, type Decision, type RetryPolicy } from '../../../src/policy/decide.js';
import type { Random } from '../../../src/policy/jitter.js';
import { mulberry32 } from '../../support/prng.js';

const NOW = Date.parse('2025-01-01T00:00:00.000Z');
const SCHEDULE = [1_000, 2_000, 4_000];

const policy = (overrides: Partial<RetryPolicy> = {}): RetryPolicy => ({
  schedule: SCHEDULE,
  maxAttempts: SCHEDULE.length + 1,
  jitter: 0,
  retryAfterMaxMs: 60_000,
  successBody: '',
  ...overrides,
});

const status = (code: number, extra: Partial<DeliveryOutcome> = {}): DeliveryOutcome => ({ status: code, durationMs: 3, ...extra });
const networkError: DeliveryOutcome = { error: 'ECONNREFUSED: connect ECONNREFUSED', durationMs: 1 };
const noRandom: Random = () => {
  throw new Error('random() must not be called');
};

const run = (outcome: DeliveryOutcome, attempt: number, p: RetryPolicy = policy(), random: Random = noRandom): Decision =>
  decide(outcome, attempt, p, NOW, random);

describe('decide: success', () => {
  it.each([200, 201, 204, 299])('acks a %i on every attempt, the last included', (code) => {
    for (let attempt = 1; attempt <= 6; attempt += 1) expect(run(status(code), attempt)).toEqual({ kind: 'ack' });
  });

  it('acks only with the success body when one is required', () => {
    const p = policy({ successBody: 'success' });
    expect(run(status(200, { body: ' success\n' }), 1, p)).toEqual({ kind: 'ack' });
    expect(run(status(200, { body: 'nope' }), 1, p)).toEqual({
      kind: 'retry',
      delayMs: 1_000,
      attempt: 2,
      why: 'HTTP 200 without the expected success body',
    });
  });
});

describe('decide: terminal answers', () => {
  it.each([301, 400, 401, 403, 404, 410, 422])('dead-letters a %i as rejected on any attempt', (code) => {
    for (let attempt = 1; attempt <= 6; attempt += 1) {
      expect(run(status(code), attempt)).toEqual({ kind: 'dead', reason: 'rejected', why: `HTTP ${code}` });
    }
  });

  it('ignores Retry-After on a terminal answer', () => {
    expect(run(status(404, { retryAfter: '5' }), 1)).toEqual({ kind: 'dead', reason: 'rejected', why: 'HTTP 404' });
  });
});

describe('decide: retryable outcomes with attempts left', () => {
  const retryable: Array<[string, DeliveryOutcome, string]> = [
    ['408', status(408), 'HTTP 408'],
    ['429', status(429), 'HTTP 429'],
    ['500', status(500), 'HTTP 500'],
    ['503', status(503), 'HTTP 503'],
    ['network error', networkError, networkError.error as string],
  ];

  it.each(retryable)('retries a %s with the schedule delay and attempt + 1', (_name, outcome, why) => {
    expect(run(outcome, 1)).toEqual({ kind: 'retry', delayMs: 1_000, attempt: 2, why });
    expect(run(outcome, 2)).toEqual({ kind: 'retry', delayMs: 2_000, attempt: 3, why });
    expect(run(outcome, 3)).toEqual({ kind: 'retry', delayMs: 4_000, attempt: 4, why });
  });

  it('repeats the last delay past the end of the schedule', () => {
    const p = policy({ maxAttempts: 8 });
    for (let attempt = 3; attempt < 8; attempt += 1) {
      expect(run(status(503), attempt, p)).toEqual({ kind: 'retry', delayMs: 4_000, attempt: attempt + 1, why: 'HTTP 503' });
    }
  });

  it('walks the whole default-shaped schedule in order', () => {
    const schedule = [15e3, 15e3, 30e3, 18e4, 6e5, 12e5, 18e5, 18e5, 18e5, 36e5, 108e5, 108e5, 108e5, 216e5, 216e5];
    const p = policy({ schedule, maxAttempts: 16 });
    const delays: number[] = [];
    let attempt = 1;
    for (;;) {
      const decision = run(status(500), attempt, p);
      if (decision.kind !== 'retry') {
        expect(decision).toEqual({ kind: 'dead', reason: 'exhausted', why: 'HTTP 500' });
        break;
      }
      expect(decision.attempt).toBe(attempt + 1);
      delays.push(decision.delayMs);
      attempt = decision.attempt;
    }
    expect(attempt).toBe(16);
    expect(delays).toEqual(schedule);
  });
});

describe('decide: exhausted', () => {
  it('dead-letters the last attempt as exhausted, with the reason', () => {
    expect(run(status(503), 4)).toEqual({ kind: 'dead', reason: 'exhausted', why: 'HTTP 503' });
    expect(run(networkError, 4)).toEqual({ kind: 'dead', reason: 'exhausted', why: networkError.error });
  });

  it('dead-letters an attempt beyond maxAttempts too', () => {
    expect(run(status(503), 9)).toEqual({ kind: 'dead', reason: 'exhausted', why: 'HTTP 503' });
  });

  it('never retries when maxAttempts is 1', () => {
    const p = policy({ maxAttempts: 1 });
    expect(run(status(503), 1, p)).toEqual({ kind: 'dead', reason: 'exhausted', why: 'HTTP 503' });
    expect(run(status(429, { retryAfter: '5' }), 1, p)).toEqual({ kind: 'dead', reason: 'exhausted', why: 'HTTP 429' });
    expect(run(status(200), 1, p)).toEqual({ kind: 'ack' });
  });

  it('reports a terminal answer on the last attempt as rejected, not exhausted', () => {
    expect(run(status(400), 4)).toEqual({ kind: 'dead', reason: 'rejected', why: 'HTTP 400' });
  });
});

describe('decide: Retry-After', () => {
  it('overrides the schedule with delta-seconds', () => {
    expect(run(status(429, { retryAfter: '7' }), 1)).toEqual({ kind: 'retry', delayMs: 7_000, attempt: 2, why: 'HTTP 429' });
    expect(run(status(503, { retryAfter: '30' }), 3)).toEqual({ kind: 'retry', delayMs: 30_000, attempt: 4, why: 'HTTP 503' });
  });

  it('overrides the schedule with an HTTP date measured from now', () => {
    expect(run(status(503, { retryAfter: 'Wed, 01 Jan 2025 00:00:45 GMT' }), 1)).toMatchObject({ kind: 'retry', delayMs: 45_000 });
  });

  it('is clamped to retryAfterMaxMs', () => {
    expect(run(status(429, { retryAfter: '3600' }), 1)).toMatchObject({ kind: 'retry', delayMs: 60_000 });
    expect(run(status(429, { retryAfter: 'Thu, 01 Jan 2026 00:00:00 GMT' }), 1)).toMatchObject({ delayMs: 60_000 });
  });

  it('is raised to at least 1 s', () => {
    expect(run(status(429, { retryAfter: '0' }), 1)).toMatchObject({ kind: 'retry', delayMs: 1_000 });
    expect(run(status(503, { retryAfter: 'Tue, 31 Dec 2024 00:00:00 GMT' }), 1)).toMatchObject({ delayMs: 1_000 });
  });

  it('is not jittered, and random() is not drawn for it', () => {
    const p = policy({ jitter: 0.5 });
    expect(run(status(429, { retryAfter: '10' }), 1, p, noRandom)).toMatchObject({ delayMs: 10_000 });
  });

  it('falls back to the jittered schedule when unreadable', () => {
    const p = policy({ jitter: 0.1 });
    expect(run(status(503, { retryAfter: 'soon' }), 2, p, () => 0)).toEqual({ kind: 'retry', delayMs: 1_800, attempt: 3, why: 'HTTP 503' });
  });

  it('also applies to network-level retries and success-body mismatches', () => {
    expect(run({ ...networkError, retryAfter: '3' }, 1)).toMatchObject({ delayMs: 3_000 });
    const p = policy({ successBody: 'success' });
    expect(run(status(200, { body: 'x', retryAfter: '3' }), 1, p)).toMatchObject({ kind: 'retry', delayMs: 3_000 });
  });
});

describe('decide: jitter on the schedule delay', () => {
  const p = policy({ jitter: 0.1 });

  it('applies the low end when random() is 0', () => {
    expect(run(status(500), 1, p, () => 0)).toMatchObject({ delayMs: 900 });
    expect(run(status(500), 3, p, () => 0)).toMatchObject({ delayMs: 3_600 });
  });

  it('keeps the delay at random() = 0.5', () => {
    expect(run(status(500), 2, p, () => 0.5)).toMatchObject({ delayMs: 2_000 });
  });

  it('applies the high end as random() approaches 1', () => {
    expect(run(status(500), 3, p, () => 0.999_999_9)).toMatchObject({ delayMs: 4_400 });
  });

  it('stays within ±jitter of the schedule for seeded draws', () => {
    const random = mulberry32(7);
    for (let i = 0; i < 500; i += 1) {
      const attempt = 1 + (i % 3);
      const base = SCHEDULE[attempt - 1] as number;
      const decision = run(status(502), attempt, p, random);
      if (decision.kind !== 'retry') throw new Error(`expected a retry, got ${decision.kind}`);
      expect(decision.delayMs).toBeGreaterThanOrEqual(base * 0.9);
      expect(decision.delayMs).toBeLessThanOrEqual(base * 1.1);
      expect(decision.attempt).toBe(attempt + 1);
    }
  });

  it('does not draw random() for ack, rejected or exhausted decisions', () => {
    expect(run(status(200), 1, p, noRandom).kind).toBe('ack');
    expect(run(status(404), 1, p, noRandom).kind).toBe('dead');
    expect(run(status(500), 4, p, noRandom).kind).toBe('dead');
  });
});

describe('decide: a target refused by the address policy', () => {
  const forbidden: DeliveryOutcome = { error: 'CR_ERR_FORBIDDEN_TARGET: 169.254.169.254 is link-local', forbidden: true, durationMs: 1 };

  it('is dead at once with reason forbidden-target, even with attempts left', () => {
    const decision = decide(forbidden, 1, policy(), 0, () => 0.5);
    expect(decision).toEqual({ kind: 'dead', reason: 'forbidden-target', why: forbidden.error });
  });
});
