import { describe, expect, it } from 'vitest';
import { dlqEntry, parseBody, type DeadMessage } from '../../../src/dlq/dlq-entry.js';
import { callbackId } from '../../../src/message/callback-id.js';
import { HEADER } from '../../../src/message/headers.js';

const now = new Date('2025-06-01T12:00:00.000Z');
const message = (body: unknown, properties: DeadMessage['properties'] = {}): DeadMessage => ({
  content: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  properties,
});

describe('dlqEntry', () => {
  it('reads a callback the worker parked, from its x-callback-* headers', () => {
    const entry = dlqEntry(
      message(
        { id: 'order-42', url: 'https://example.com/hook', body: { a: 1 } },
        {
          messageId: 'order-42',
          timestamp: 1_700_000_000,
          headers: {
            [HEADER.reason]: 'rejected',
            [HEADER.attempts]: 3,
            [HEADER.lastStatus]: 404,
            [HEADER.lastError]: 'HTTP 404',
            [HEADER.lastAttemptAt]: '2025-06-01T11:58:30.000Z',
          },
        },
      ),
      now,
    );
    expect(entry).toEqual({
      id: 'order-42',
      url: 'https://example.com/hook',
      reason: 'rejected',
      attempts: 3,
      lastStatus: 404,
      lastError: 'HTTP 404',
      since: '2025-06-01T11:58:30.000Z',
      ageSeconds: 90,
    });
  });

  it('shows the URL masked (the message itself keeps it whole)', () => {
    const entry = dlqEntry(message({ id: 'x', url: 'https://u:p@example.com/hook?sig=abc#f', body: 1 }, {}), new Date(0));
    expect(entry.url).toBe('https://***@example.com/hook?sig=***');
  });

  it('takes the reason of a message the broker dead-lettered from the head of x-death', () => {
    const headers = {
      'x-death': [
        { count: 1, reason: 'delivery_limit', queue: 'cr.work' },
        { count: 1, reason: 'expired', queue: 'cr.delay.00' },
      ],
      'x-first-death-reason': 'expired',
      [HEADER.attempt]: 2,
    };
    const entry = dlqEntry(message({ url: 'http://x/', body: null }, { messageId: 'm-1', headers }), now);
    expect(entry).toMatchObject({ id: 'm-1', reason: 'delivery_limit', attempts: null, lastStatus: null, lastError: null });
  });

  it('falls back to x-last-death-reason, then to unknown', () => {
    expect(dlqEntry(message({}, { headers: { 'x-last-death-reason': 'delivery_limit' } }), now).reason).toBe('delivery_limit');
    expect(dlqEntry(message({}, { headers: { 'x-death': [{ reason: Buffer.from('rejected') }] } }), now).reason).toBe('rejected');
    expect(dlqEntry(message({}), now).reason).toBe('unknown');
  });

  it('ages from the AMQP timestamp (seconds) when there was no attempt', () => {
    const entry = dlqEntry(message({ url: 'http://x/' }, { timestamp: now.getTime() / 1000 - 3600 }), now);
    expect(entry).toMatchObject({ since: '2025-06-01T11:00:00.000Z', ageSeconds: 3600 });
  });

  it('has no age without either time, and ignores an unreadable last-attempt time', () => {
    expect(dlqEntry(message({}), now)).toMatchObject({ since: null, ageSeconds: null });
    expect(dlqEntry(message({}, { headers: { [HEADER.lastAttemptAt]: 'yesterday' }, timestamp: 1 }), now).since).toBe(
      '1970-01-01T00:00:01.000Z',
    );
  });

  it('survives an invalid message: not JSON, no url, numbers as strings', () => {
    const entry = dlqEntry(message('{oops', { messageId: 'gen-1', headers: { [HEADER.reason]: 'invalid', [HEADER.attempts]: '0' } }), now);
    expect(entry).toMatchObject({ id: 'gen-1', url: null, reason: 'invalid', attempts: 0 });
    expect(dlqEntry(message({ url: 42 }), now)).toMatchObject({ id: null, url: null });
  });
});

describe('callbackId', () => {
  it('prefers the body id, like the worker, then message_id', () => {
    expect(callbackId('from-body', 'from-property')).toBe('from-body');
    expect(callbackId('', 'from-property')).toBe('from-property');
    expect(callbackId(undefined, 'from-property')).toBe('from-property');
    expect(callbackId(7, undefined)).toBeUndefined();
    expect(callbackId(undefined, '')).toBeUndefined();
  });

  it('skips an id the worker would refuse, as the worker does', () => {
    expect(callbackId(' spaced ', 'from-property')).toBe('from-property');
    expect(callbackId('x'.repeat(257), undefined)).toBeUndefined();
    expect(dlqEntry(message({ id: 'has\ttab', url: 'https://a.example' }, { messageId: 'gen-2' }), new Date())).toMatchObject({
      id: 'gen-2',
    });
  });
});

describe('parseBody', () => {
  it('returns JSON objects only', () => {
    expect(parseBody(Buffer.from('{"a":1}'))).toEqual({ a: 1 });
    expect(parseBody(Buffer.from('[1]'))).toBeUndefined();
    expect(parseBody(Buffer.from('null'))).toBeUndefined();
    expect(parseBody(Buffer.from('nope'))).toBeUndefined();
  });
});
