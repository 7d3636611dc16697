import { describe, it, expect } from 'vitest';
import { HEADER, carriedHeaders, readAttempt, readString } from '../../../src/message/headers.js';

describe('HEADER', () => {
  it('names the wire-contract headers', () => {
    expect(HEADER).toEqual({
      attempt: 'x-callback-attempt',
      firstAttemptAt: 'x-callback-first-attempt-at',
      lastAttemptAt: 'x-callback-last-attempt-at',
      lastStatus: 'x-callback-last-status',
      lastError: 'x-callback-last-error',
      reason: 'x-callback-reason',
      attempts: 'x-callback-attempts',
      replayedAt: 'x-replayed-at',
      dueAt: 'x-callback-due-at',
      delay: 'x-delay',
      returns: 'x-callback-returns',
      copy: 'x-callback-copy',
      policy: 'x-callback-policy',
      schedule: 'x-callback-schedule',
      maxAttempts: 'x-callback-max-attempts',
      timeout: 'x-callback-timeout',
      successBody: 'x-callback-success-body',
      heldSince: 'x-callback-held-since',
      deferrals: 'x-callback-deferrals',
      heldMs: 'x-callback-held-ms',
      orderCopy: 'x-callback-order-copy',
      orderFrom: 'x-callback-order-from',
      orderSeq: 'x-callback-order-seq',
      orderWake: 'x-callback-order-wake',
      orderRelease: 'x-callback-order-release',
    });
  });
});

describe('carriedHeaders', () => {
  it('keeps the producer headers and the relay retry state', () => {
    const headers = { 'x-tenant': 'acme', [HEADER.attempt]: 3, [HEADER.firstAttemptAt]: '2025-01-01T00:00:00.000Z' };
    expect(carriedHeaders(headers)).toEqual(headers);
  });

  it('strips everything the broker adds, x-delay and the copy token', () => {
    const broker = {
      'x-death': [{ count: 1, reason: 'expired', queue: 'cr.delay.03' }],
      'x-first-death-exchange': 'cr.delay.03',
      'x-first-death-queue': 'cr.delay.03',
      'x-first-death-reason': 'expired',
      'x-last-death-exchange': 'cr.delay.00',
      'x-last-death-queue': 'cr.delay.00',
      'x-last-death-reason': 'expired',
      'x-delivery-count': 2,
      'x-delay': 15_000,
      'x-callback-copy': '123.4',
      'x-callback-due-at': 1_700_000_000_000,
    };
    expect(carriedHeaders({ ...broker, 'x-tenant': 'acme' })).toEqual({ 'x-tenant': 'acme' });
  });

  it('returns a new object and leaves the input alone', () => {
    const input = { 'x-death': [], keep: 1 };
    const out = carriedHeaders(input);
    expect(out).not.toBe(input);
    expect(input).toEqual({ 'x-death': [], keep: 1 });
  });

  it('returns {} for missing headers', () => {
    expect(carriedHeaders(undefined)).toEqual({});
    expect(carriedHeaders({})).toEqual({});
  });
});

describe('readAttempt', () => {
  it('reads the attempt header', () => {
    expect(readAttempt({ [HEADER.attempt]: 1 })).toBe(1);
    expect(readAttempt({ [HEADER.attempt]: 7 })).toBe(7);
  });

  it('reads a numeric string', () => {
    expect(readAttempt({ [HEADER.attempt]: '4' })).toBe(4);
  });

  it('defaults to 1 when headers or the attempt header are missing', () => {
    expect(readAttempt(undefined)).toBe(1);
    expect(readAttempt({})).toBe(1);
    expect(readAttempt({ other: 5 })).toBe(1);
  });

  it.each([0, -3, 2.5, 'abc', '', null, Number.NaN, Number.POSITIVE_INFINITY, {}])('defaults to 1 for the unreadable %j', (value) => {
    expect(readAttempt({ [HEADER.attempt]: value })).toBe(1);
  });
});

describe('readString', () => {
  it('reads a string header', () => {
    expect(readString({ a: 'x' }, 'a')).toBe('x');
  });

  it('decodes a Buffer header as UTF-8', () => {
    expect(readString({ a: Buffer.from('zürich', 'utf8') }, 'a')).toBe('zürich');
  });

  it('returns undefined for missing or non-string values', () => {
    expect(readString(undefined, 'a')).toBeUndefined();
    expect(readString({}, 'a')).toBeUndefined();
    expect(readString({ a: 5 }, 'a')).toBeUndefined();
    expect(readString({ a: null }, 'a')).toBeUndefined();
  });
});
