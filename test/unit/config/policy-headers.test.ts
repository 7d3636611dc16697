import { describe, expect, it } from 'vitest';
import { HEADER } from '../../../src/message/headers.js';
import { policyHeaders, readPolicyHeaders } from '../../../src/config/policy-headers.js';
import { resolvePolicy, type PolicyDefaults } from '../../../src/policy/message-policy.js';

const FIRST: PolicyDefaults = {
  retry: { schedule: [15_000], maxAttempts: 2, jitter: 0.1, retryAfterMaxMs: 60_000, successBody: 'ok' },
  timeoutMs: 10_000,
};
/** A second worker, configured differently in every respect. */
const SECOND: PolicyDefaults = {
  retry: { schedule: [60_000, 120_000], maxAttempts: 9, jitter: 0.3, retryAfterMaxMs: 5_000, successBody: '' },
  timeoutMs: 1_000,
};

const payment = resolvePolicy(
  'payment',
  { schedule: [15_000, 15_000, 30_000, 180_000], maxAttempts: 5, timeoutMs: 5_000, successBody: 'success' },
  FIRST,
);

describe('policy headers', () => {
  it('are written with every field resolved, durations spelled like the settings', () => {
    expect(policyHeaders(payment)).toEqual({
      [HEADER.policy]: 'payment',
      [HEADER.schedule]: '15s,15s,30s,3m',
      [HEADER.maxAttempts]: 5,
      [HEADER.timeout]: '5s',
      [HEADER.successBody]: 'success',
    });
  });

  it('round-trip: another worker reads the same policy back, with only its own jitter and Retry-After clamp', () => {
    const read = readPolicyHeaders('payment', { 'x-tenant': 'acme', ...policyHeaders(payment) }, SECOND);
    expect(read).toEqual({ ...payment, retry: { ...payment.retry, jitter: 0.3, retryAfterMaxMs: 5_000 } });
  });

  it("round-trip keeps the first worker's defaults for the fields the policy left out", () => {
    const partial = resolvePolicy('bulk', { schedule: [1_500] }, FIRST);
    const read = readPolicyHeaders('bulk', policyHeaders(partial), SECOND);
    expect(read).toMatchObject({ timeoutMs: 10_000, retry: { schedule: [1_500], maxAttempts: 2, successBody: 'ok' } });
  });

  it('reads values as amqplib hands them back (long strings as Buffers)', () => {
    const headers = Object.fromEntries(
      Object.entries(policyHeaders(payment)).map(([name, value]) => [name, typeof value === 'string' ? Buffer.from(value) : value]),
    );
    expect(readPolicyHeaders('payment', headers, FIRST)).toEqual(payment);
  });

  it.each([
    ['another policy', { [HEADER.policy]: 'bulk' }, /^x-callback-policy: names policy "bulk", but the callback's policy is "payment"$/],
    ['a missing field', { [HEADER.timeout]: undefined }, /^x-callback-timeout: is missing$/],
    [
      'a bad schedule',
      { [HEADER.schedule]: '15s,later' },
      /^x-callback-schedule: must be a comma-separated list of durations .*: value was "15s,later"$/,
    ],
    ['a bad count', { [HEADER.maxAttempts]: -1 }, /^x-callback-max-attempts: must be a whole number ≥ 1: value was -1$/],
    ['a bad timeout', { [HEADER.timeout]: 'soon' }, /^x-callback-timeout: must be a duration/],
  ])('refuses %s, naming the header', (_what, change, message) => {
    const headers: Record<string, unknown> = { ...policyHeaders(payment), ...change };
    for (const [name, value] of Object.entries(headers)) if (value === undefined) delete headers[name];
    expect(() => readPolicyHeaders('payment', headers, SECOND)).toThrow(
      expect.objectContaining({ code: 'CR_ERR_INVALID_CALLBACK', message: expect.stringMatching(message) }),
    );
  });
});
