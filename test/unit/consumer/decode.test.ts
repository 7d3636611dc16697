import { describe, it, expect } from 'vitest';
import type { ConsumeMessage } from 'amqplib';
import { decode, dueAtOf, type Decoded, type Delivery } from '../../../src/consumer/decode.js';
import { MAX_PRODUCER_HEADER_BYTES } from '../../../src/message/header-table-size.js';
import { HEADER } from '../../../src/message/headers.js';
import { policyHeaders } from '../../../src/config/policy-headers.js';
import { resolvePolicy, type PolicyDefaults, type RetryPolicies } from '../../../src/policy/message-policy.js';

const LIMIT = 1_048_576;
const DERIVED = /^msg_[A-Za-z0-9_-]{43}$/;

function message(
  content: string | Buffer,
  properties: { headers?: Record<string, unknown>; messageId?: unknown } = { headers: {}, messageId: 'm1' },
): ConsumeMessage {
  return {
    content: typeof content === 'string' ? Buffer.from(content, 'utf8') : content,
    fields: {} as any,
    properties: properties as any,
  };
}

const json = (value: unknown): string => JSON.stringify(value);

function delivered(decoded: Decoded): Delivery {
  if (!decoded.ok) throw new Error(`expected ok, got ${decoded.error}`);
  return decoded.delivery;
}

function failed(decoded: Decoded): Extract<Decoded, { ok: false }> {
  if (decoded.ok) throw new Error('expected a failure');
  return decoded;
}

describe('decode: valid callbacks', () => {
  it('returns the callback with attempt 1 and no first attempt time', () => {
    const callback = { id: 'c1', url: 'https://example.com/hook', body: { a: 1 } };
    expect(decode(message(json(callback)), LIMIT)).toEqual({
      ok: true,
      delivery: { id: 'c1', callback, url: new URL(callback.url), payload: '{"a":1}', attempt: 1, firstAttemptAt: undefined },
    });
  });

  it('prefers the body id over the message id', () => {
    expect(delivered(decode(message(json({ id: 'from-body', url: 'https://x.test', body: 1 })), LIMIT)).id).toBe('from-body');
  });

  it('falls back to the message id', () => {
    expect(delivered(decode(message(json({ url: 'https://x.test', body: 1 })), LIMIT)).id).toBe('m1');
  });

  it('derives an id from the message when neither is present', () => {
    const content = json({ url: 'https://x.test', body: 1 });
    const id = delivered(decode(message(content, { headers: {} }), LIMIT)).id;
    expect(id).toMatch(DERIVED);
    expect(delivered(decode(message(content, { headers: {}, messageId: '' }), LIMIT)).id).toBe(id);
    expect(delivered(decode(message(content, { headers: {}, messageId: 42 }), LIMIT)).id).toBe(id);
  });

  it('derives the same id on every redelivery, whatever the broker added', () => {
    const content = json({ url: 'https://x.test', body: 1 });
    const first = delivered(decode(message(content, { headers: { tenant: 'a' } }), LIMIT)).id;
    const redelivered = { tenant: 'a', 'x-delivery-count': 3, 'x-death': [{ count: 1, reason: 'rejected' }] };
    expect(delivered(decode(message(content, { headers: redelivered }), LIMIT)).id).toBe(first);
  });

  it('derives different ids for different bodies or producer properties', () => {
    const id = (content: string, properties: Record<string, unknown>): string =>
      delivered(decode(message(content, properties as any), LIMIT)).id;
    const content = json({ url: 'https://x.test', body: 1 });
    const ids = new Set([
      id(content, { headers: {} }),
      id(json({ url: 'https://x.test', body: 2 }), { headers: {} }),
      id(content, { headers: { tenant: 'a' } }),
      id(content, { headers: {}, timestamp: 1_700_000_000 }),
      id(content, { headers: {}, correlationId: 'c' }),
    ]);
    expect(ids.size).toBe(5);
  });

  it('reads the attempt and first attempt time from the headers', () => {
    const headers = { 'x-callback-attempt': 3, 'x-callback-first-attempt-at': '2025-01-01T00:00:00.000Z' };
    const delivery = delivered(decode(message(json({ url: 'https://x.test', body: 1 }), { headers, messageId: 'm1' }), LIMIT));
    expect(delivery.attempt).toBe(3);
    expect(delivery.firstAttemptAt).toBe('2025-01-01T00:00:00.000Z');
  });

  it('reads a Buffer first attempt time', () => {
    const headers = { 'x-callback-first-attempt-at': Buffer.from('2025-01-01T00:00:00.000Z') };
    expect(delivered(decode(message(json({ url: 'https://x.test', body: 1 }), { headers }), LIMIT)).firstAttemptAt).toBe(
      '2025-01-01T00:00:00.000Z',
    );
  });

  it.each([
    ['"5"', '5', 5],
    ['0', 0, 1],
    ['-2', -2, 1],
    ['1.5', 1.5, 1],
    ['"x"', 'x', 1],
  ])('reads the attempt header %s as %i', (_label, value, attempt) => {
    const headers = { 'x-callback-attempt': value };
    expect(delivered(decode(message(json({ url: 'https://x.test', body: 1 }), { headers }), LIMIT)).attempt).toBe(attempt);
  });

  it('copes with missing headers', () => {
    expect(delivered(decode(message(json({ url: 'https://x.test', body: 1 }), { messageId: 'm1' }), LIMIT)).attempt).toBe(1);
  });

  it('accepts a message of exactly the limit', () => {
    const content = json({ url: 'https://x.test', body: 1 });
    expect(decode(message(content), Buffer.byteLength(content)).ok).toBe(true);
  });
});

describe('decode: the headers later steps read', () => {
  const content = json({ url: 'https://x.test', body: 1 });
  const decodeWith = (headers: Record<string, unknown>): Delivery =>
    delivered(decode(message(content, { headers, messageId: 'm1' }), LIMIT));

  it("reads what open circuits held: the hold under way, its deferrals, the earlier holds' total", () => {
    const delivery = decodeWith({ [HEADER.heldSince]: '2025-01-01T00:00:00.000Z', [HEADER.deferrals]: 3, [HEADER.heldMs]: 1_500 });
    expect(delivery).toMatchObject({ heldSince: Date.parse('2025-01-01T00:00:00.000Z'), deferrals: 3, heldMs: 1_500 });
  });

  it('ignores holds it cannot read', () => {
    const delivery = decodeWith({ [HEADER.heldSince]: 'soon', [HEADER.deferrals]: 1.5, [HEADER.heldMs]: -1 });
    expect([delivery.heldSince, delivery.deferrals, delivery.heldMs]).toEqual([undefined, undefined, undefined]);
    expect(decodeWith({ [HEADER.deferrals]: '2' }).deferrals).toBe(2);
  });

  it('reads the replay stamp a cancel marker is weighed against', () => {
    expect(decodeWith({ [HEADER.replayedAt]: '2025-01-01T00:00:00.000Z' }).replayedAt).toBe('2025-01-01T00:00:00.000Z');
    expect(decodeWith({}).replayedAt).toBeUndefined();
  });
});

describe('decode: failures never throw', () => {
  it('rejects a message over the size limit before parsing it', () => {
    const content = json({ url: 'https://x.test', body: 'x'.repeat(100) });
    const result = failed(decode(message(content), 50));
    expect(result.error).toContain(`${Buffer.byteLength(content)} bytes`);
    expect(result.error).toContain('MAX_PAYLOAD_BYTES');
    expect(result.id).toBe('m1');
    expect(result.attempt).toBe(1);
  });

  it.each(['', 'not json', '{"url":', "{'url':'x'}", '\u0000'])('rejects the non-JSON content %j', (content) => {
    expect(failed(decode(message(content), LIMIT)).error).toMatch(/^not JSON: /);
  });

  it('rejects invalid UTF-8 that is not JSON', () => {
    expect(failed(decode(message(Buffer.from([0xff, 0xfe, 0x00])), LIMIT)).error).toMatch(/^not JSON/);
  });

  it.each([
    ['null', 'callback: '],
    ['[]', 'callback: '],
    ['42', 'callback: '],
    [json({ body: 1 }), 'url: '],
    [json({ url: 'ftp://x.test', body: 1 }), 'url: '],
    [json({ url: 'https://x.test' }), 'body: '],
    [json({ url: 'https://x.test', body: 1, extra: 1 }), 'extra: '],
    [json({ url: 'https://x.test', body: 1, headers: { Host: 'x' } }), 'headers.Host: '],
  ])('rejects the invalid callback %s with the validation message', (content, prefix) => {
    expect(failed(decode(message(content), LIMIT)).error.startsWith(prefix)).toBe(true);
  });

  it('uses the message id, or a derived one, for a failure', () => {
    const bad = json({ id: 'from-body', url: 'ftp://x.test', body: 1 });
    expect(failed(decode(message(bad), LIMIT)).id).toBe('m1');
    const derived = failed(decode(message(bad, { headers: {} }), LIMIT)).id;
    expect(derived).toMatch(DERIVED);
    expect(failed(decode(message(bad, { headers: {} }), LIMIT)).id).toBe(derived);
  });

  it('rejects headers too large for the copies the relay publishes', () => {
    const content = json({ url: 'https://x.test', body: 1 });
    const headers = { big: 'x'.repeat(MAX_PRODUCER_HEADER_BYTES) };
    expect(failed(decode(message(content, { headers, messageId: 'm1' }), LIMIT)).error).toMatch(
      /^headers are \d+ bytes encoded, over the limit of 61440$/,
    );
    const fits = { big: 'x'.repeat(MAX_PRODUCER_HEADER_BYTES - 100) };
    expect(delivered(decode(message(content, { headers: fits, messageId: 'm1' }), LIMIT)).id).toBe('m1');
  });

  it('keeps the attempt header on a failure', () => {
    expect(failed(decode(message('nope', { headers: { 'x-callback-attempt': 4 }, messageId: 'm1' }), LIMIT)).attempt).toBe(4);
  });
});

describe('decode: retry policies', () => {
  const defaults: PolicyDefaults = {
    retry: { schedule: [15_000], maxAttempts: 2, jitter: 0, retryAfterMaxMs: 60_000, successBody: '' },
    timeoutMs: 10_000,
  };
  const payment = resolvePolicy('payment', { schedule: [1_000, 2_000], timeoutMs: 5_000 }, defaults);
  const policies: RetryPolicies = { defaults, byName: new Map([['payment', payment]]) };
  const withPolicy = json({ url: 'https://x.test', body: 1, policy: 'payment' });

  it("a callback without a policy gets none: the worker's own settings apply", () => {
    expect(delivered(decode(message(json({ url: 'https://x.test', body: 1 })), LIMIT, policies)).policy).toBeUndefined();
  });

  it("first attempt: the policy comes from the worker's file, shared, not rebuilt", () => {
    expect(delivered(decode(message(withPolicy), LIMIT, policies)).policy).toBe(payment);
  });

  it('an unknown policy fails decode, naming it', () => {
    expect(failed(decode(message(withPolicy), LIMIT, { defaults, byName: new Map() })).error).toBe(
      'policy: "payment" is not a retry policy of this worker (RETRY_POLICIES_FILE)',
    );
  });

  it("a retry: the headers decide, not this worker's file", () => {
    const elsewhere = resolvePolicy('payment', { schedule: [60_000], maxAttempts: 9, timeoutMs: 1_000, successBody: 'ok' }, defaults);
    const headers = { ...policyHeaders(elsewhere), [HEADER.attempt]: 2 };
    expect(delivered(decode(message(withPolicy, { headers, messageId: 'm1' }), LIMIT, policies)).policy).toEqual(elsewhere);
    // Even a worker whose file lacks the policy follows the headers.
    expect(delivered(decode(message(withPolicy, { headers, messageId: 'm1' }), LIMIT, { defaults, byName: new Map() })).policy).toEqual(
      elsewhere,
    );
  });

  it('malformed policy headers fail decode, naming the header', () => {
    const headers = { ...policyHeaders(payment), [HEADER.maxAttempts]: 'many' };
    expect(failed(decode(message(withPolicy, { headers, messageId: 'm1' }), LIMIT, policies)).error).toMatch(
      /^x-callback-max-attempts: must be a whole number/,
    );
  });
});

describe('dueAtOf: when a message is due (queues mode)', () => {
  const NOW = 1_700_000_000_000;
  const due = (at: unknown): Record<string, unknown> => ({ [HEADER.dueAt]: at });

  it('reads the due time, and none when the header is absent', () => {
    expect(dueAtOf(due(NOW + 300))).toBe(NOW + 300);
    expect(dueAtOf(undefined)).toBeUndefined();
    expect(dueAtOf({})).toBeUndefined();
  });

  it('reads a 64-bit integer header decoded as a bigint', () => {
    expect(dueAtOf(due(BigInt(NOW + 400)))).toBe(NOW + 400);
  });

  it('reads no due time from bad input (it is never held): a string, NaN, an object, a buffer', () => {
    expect(dueAtOf(due(String(NOW + 500)))).toBeUndefined();
    expect(dueAtOf(due(Number.NaN))).toBeUndefined();
    expect(dueAtOf(due(Number.POSITIVE_INFINITY))).toBeUndefined();
    expect(dueAtOf(due({ at: NOW + 500 }))).toBeUndefined();
    expect(dueAtOf(due(Buffer.from('x')))).toBeUndefined();
  });
});
