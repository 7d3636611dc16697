import { describe, expect, it } from 'vitest';
import { replayHeaders, replayPublishOptions } from '../../../src/dlq/replay-publish-options.js';
import { HEADER } from '../../../src/message/headers.js';

const parked = {
  'x-tenant': 'acme',
  [HEADER.attempt]: 4,
  [HEADER.reason]: 'exhausted',
  [HEADER.attempts]: 4,
  [HEADER.lastStatus]: 500,
  [HEADER.lastError]: 'HTTP 500',
  [HEADER.firstAttemptAt]: '2025-06-01T10:00:00.000Z',
  [HEADER.lastAttemptAt]: '2025-06-01T11:00:00.000Z',
  'X-Callback-Future-Field': 'x',
  'x-death': [{ reason: 'delivery_limit' }],
  'x-first-death-exchange': '',
  'x-first-death-queue': 'cr.work',
  'x-first-death-reason': 'delivery_limit',
  'x-last-death-exchange': '',
  'x-last-death-queue': 'cr.work',
  'x-last-death-reason': 'delivery_limit',
  'x-delivery-count': 3,
  'x-acquired-count': 5,
  [HEADER.delay]: 15_000,
};

describe('replayHeaders', () => {
  it('keeps only the producer headers: no retry state, no DLQ record, nothing the broker added, no x-delay', () => {
    expect(replayHeaders(parked)).toEqual({ 'x-tenant': 'acme' });
  });

  it('accepts no headers', () => {
    expect(replayHeaders(undefined)).toEqual({});
  });
});

describe('replayPublishOptions', () => {
  it('follows the wire contract and keeps the id and the original timestamp', () => {
    expect(replayPublishOptions({ headers: parked, timestamp: 1_700_000_000 }, 'order-42')).toEqual({
      persistent: true,
      contentType: 'application/json',
      messageId: 'order-42',
      timestamp: 1_700_000_000,
      headers: { 'x-tenant': 'acme' },
    });
  });

  it('leaves message_id out when the message has no id (the worker then assigns one)', () => {
    expect(replayPublishOptions({}, null)).toEqual({ persistent: true, contentType: 'application/json', headers: {} });
  });

  it('stamps the replay time, so a cancel marker written before it does not park the copy', () => {
    const parked = { 'x-callback-reason': 'canceled', 'x-replayed-at': '2026-01-01T00:00:00.000Z' };
    // Not an x-callback-* header: a replay strips those, and this one must outlive the retries that follow.
    expect(replayPublishOptions({ headers: parked }, 'order-42', '2026-02-01T00:00:00.000Z').headers).toEqual({
      'x-replayed-at': '2026-02-01T00:00:00.000Z',
    });
  });
});
