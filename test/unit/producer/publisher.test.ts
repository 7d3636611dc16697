import { describe, it, expect } from 'vitest';
import { isRelayError, type RelayError } from '../../../src/errors.js';
import { firstAttemptDelay, type PublishOptions } from '../../../src/producer/publisher.js';
import { MAX_LEVEL_DELAY_MS } from '../../../src/topology/delay-levels.js';

const NOW = Date.parse('2025-01-01T00:00:00.000Z');

function delayError(options: PublishOptions): RelayError {
  try {
    firstAttemptDelay(options, NOW);
  } catch (error) {
    if (isRelayError(error, 'CR_ERR_INVALID_CALLBACK')) return error;
    throw error;
  }
  throw new Error(`firstAttemptDelay accepted ${String(options.delay)} / ${String(options.deliverAt)}`);
}

describe('firstAttemptDelay', () => {
  it('is 0 without options', () => {
    expect(firstAttemptDelay({}, NOW)).toBe(0);
  });

  it('returns delay as given', () => {
    expect(firstAttemptDelay({ delay: 0 }, NOW)).toBe(0);
    expect(firstAttemptDelay({ delay: 15_000 }, NOW)).toBe(15_000);
    expect(firstAttemptDelay({ delay: 250.5 }, NOW)).toBe(250.5);
  });

  it('measures deliverAt from now', () => {
    expect(firstAttemptDelay({ deliverAt: new Date(NOW + 60_000) }, NOW)).toBe(60_000);
    expect(firstAttemptDelay({ deliverAt: new Date(NOW) }, NOW)).toBe(0);
  });

  it('treats a past deliverAt as now', () => {
    expect(firstAttemptDelay({ deliverAt: new Date(NOW - 1) }, NOW)).toBe(0);
    expect(firstAttemptDelay({ deliverAt: new Date(0) }, NOW)).toBe(0);
  });

  it('rejects both delay and deliverAt', () => {
    const error = delayError({ delay: 1_000, deliverAt: new Date(NOW + 1_000) });
    expect(error.field).toBe('delay');
    expect(error.message).toMatch(/not both/);
  });

  it.each([-1, -0.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY])('rejects the delay %s', (delay) => {
    expect(delayError({ delay }).field).toBe('delay');
  });

  it('rejects a non-number delay from an untyped caller', () => {
    expect(delayError({ delay: '100' as unknown as number }).field).toBe('delay');
  });

  it('rejects an invalid Date or a non-Date deliverAt', () => {
    expect(delayError({ deliverAt: new Date('nope') }).field).toBe('deliverAt');
    expect(delayError({ deliverAt: (NOW + 1_000) as unknown as Date }).field).toBe('deliverAt');
  });

  it('accepts up to 2^22 − 1 s (48.5 days) ahead', () => {
    expect(firstAttemptDelay({ delay: MAX_LEVEL_DELAY_MS }, NOW)).toBe(MAX_LEVEL_DELAY_MS);
    expect(firstAttemptDelay({ deliverAt: new Date(NOW + MAX_LEVEL_DELAY_MS) }, NOW)).toBe(MAX_LEVEL_DELAY_MS);
  });

  it('rejects anything beyond 48.5 days, naming the option', () => {
    const byDelay = delayError({ delay: MAX_LEVEL_DELAY_MS + 1 });
    expect(byDelay.field).toBe('delay');
    expect(byDelay.message).toContain('4194303s');
    expect(delayError({ delay: 60 * 86_400_000 }).field).toBe('delay');
    expect(delayError({ deliverAt: new Date(NOW + MAX_LEVEL_DELAY_MS + 1) }).field).toBe('deliverAt');
  });
});
