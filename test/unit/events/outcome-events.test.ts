import { describe, expect, it } from 'vitest';
import { isValidId, MAX_ID_LENGTH } from '../../../src/message/callback.js';
import { eventMessageId } from '../../../src/events/outcome-events.js';

describe('eventMessageId', () => {
  it('is <id>:<type>:<attempt> when that fits in a short string', () => {
    expect(eventMessageId({ id: 'order-42', type: 'retry-scheduled', attempt: 3 })).toBe('order-42:retry-scheduled:3');
  });

  it('stays within 255 bytes for the longest id a callback may have', () => {
    const id = '~'.repeat(MAX_ID_LENGTH);
    expect(isValidId(id)).toBe(true);
    const messageId = eventMessageId({ id, type: 'retry-scheduled', attempt: 1_000_000 });
    expect(Buffer.byteLength(messageId)).toBeLessThanOrEqual(255);
    expect(messageId).toMatch(/^sha256-[0-9a-f]{64}:retry-scheduled:1000000$/);
  });

  it('is the same for every copy of an outcome and differs between ids', () => {
    const long = (c: string) => eventMessageId({ id: c.repeat(250), type: 'dead', attempt: 7 });
    expect(long('a')).toBe(long('a'));
    expect(long('a')).not.toBe(long('b'));
  });
});
