import { describe, expect, it } from 'vitest';
import { BROKER_HEADERS, withoutBrokerHeaders } from '../../../src/message/broker-headers.js';
import { replayHeaders } from '../../../src/dlq/replay-publish-options.js';
import { derivedId } from '../../../src/message/derived-id.js';
import { carriedHeaders, HEADER } from '../../../src/message/headers.js';

/** What RabbitMQ 4 writes into a quorum-queue message that was dead-lettered and delivered twice. */
const written: Record<string, unknown> = {
  'x-death': [{ count: 1, reason: 'expired', queue: 'cr.delay.03' }],
  ...Object.fromEntries(
    ['first', 'last'].flatMap((when) => ['exchange', 'queue', 'reason'].map((what) => [`x-${when}-death-${what}`, 'cr.delay.03'])),
  ),
  'x-delivery-count': 1,
  'x-acquired-count': 2,
};

describe('the broker-header list', () => {
  it('names every header the broker writes, the RabbitMQ 4 x-acquired-count included', () => {
    expect([...BROKER_HEADERS].sort()).toEqual(Object.keys(written).sort());
  });

  it('is dropped alike by retry copies and DLQ replays', () => {
    const headers = { ...written, 'x-tenant': 'acme' };
    expect(withoutBrokerHeaders(headers)).toEqual({ 'x-tenant': 'acme' });
    expect(carriedHeaders(headers)).toEqual({ 'x-tenant': 'acme' });
    expect(replayHeaders(headers)).toEqual({ 'x-tenant': 'acme' });
  });

  it('retry copies keep the retry state; replays drop it; both drop x-delay and the return token', () => {
    const headers = { 'x-tenant': 'acme', [HEADER.attempt]: 3, [HEADER.delay]: 1_000, [HEADER.copy]: '7.1' };
    expect(carriedHeaders(headers)).toEqual({ 'x-tenant': 'acme', [HEADER.attempt]: 3 });
    expect(replayHeaders(headers)).toEqual({ 'x-tenant': 'acme' });
  });

  it('keeps a derived id stable across redeliveries that raise x-acquired-count', () => {
    const delivery = (acquired: number) => ({
      content: Buffer.from('{}'),
      properties: { headers: { 'x-tenant': 'acme', 'x-acquired-count': acquired } },
    });
    expect(derivedId(delivery(1))).toBe(derivedId(delivery(2)));
  });

  it("keeps a derived id stable when an ordered key's log drops a producer's x-order- and x-stream- headers", () => {
    const sent = { content: Buffer.from('{}'), properties: { headers: { 'x-tenant': 'acme', 'x-order-key': 'k', 'x-stream-offset': 4 } } };
    const logged = { content: Buffer.from('{}'), properties: { headers: { 'x-tenant': 'acme' } } };
    expect(derivedId(sent)).toBe(derivedId(logged));
    expect(derivedId(logged)).not.toBe(derivedId({ content: Buffer.from('{}'), properties: { headers: { 'x-tenant': 'other' } } }));
  });
});
