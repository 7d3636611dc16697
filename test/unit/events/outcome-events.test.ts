import { describe, expect, it } from 'vitest';
import { isValidId, MAX_ID_LENGTH } from '../../../src/message/callback.js';
import { eventMessageId, outcomeEventOf, outcomeTypeOf } from '../../../src/events/outcome-events.js';
import type { AttemptReport } from '../../../src/reports.js';

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

describe('outcomeEventOf', () => {
  const callback = { id: 'c1', url: 'https://a.example/h', target: 'https://a.example', lane: '0' };

  it('a canceled callback: a canceled event, no attempt made', () => {
    expect(outcomeEventOf({ ...callback, kind: 'canceled', attempt: 2 }, 'w/1', 'T')).toEqual({
      type: 'canceled',
      id: 'c1',
      url: 'https://a.example/h',
      attempt: 2,
      status: undefined,
      error: 'canceled',
      nextAttemptAt: undefined,
      reason: 'canceled',
      durationMs: 0,
      worker: 'w/1',
      at: 'T',
    });
  });

  it('a callback whose circuit stayed open to the end of its schedule: a dead event, exhausted, with the attempts made', () => {
    expect(outcomeEventOf({ ...callback, kind: 'expired', attempt: 1, why: 'CIRCUIT_OPEN: x' }, 'w/1', 'T')).toEqual({
      type: 'dead',
      id: 'c1',
      url: 'https://a.example/h',
      attempt: 1,
      status: undefined,
      error: 'CIRCUIT_OPEN: x',
      nextAttemptAt: undefined,
      reason: 'exhausted',
      durationMs: 0,
      worker: 'w/1',
      at: 'T',
    });
  });

  it('a held callback: a paused event with the attempts made before, nothing else to tell', () => {
    expect(outcomeEventOf({ ...callback, kind: 'held', attempt: 1 }, 'w/1', 'T')).toEqual({
      type: 'paused',
      id: 'c1',
      url: 'https://a.example/h',
      attempt: 1,
      status: undefined,
      error: undefined,
      nextAttemptAt: undefined,
      reason: undefined,
      durationMs: undefined,
      worker: 'w/1',
      at: 'T',
    });
  });

  it('carries the URL masked: user-info and query values hidden, no fragment', () => {
    const event = outcomeEventOf({ ...callback, url: 'https://u:p@a.example/h?token=abc&page=2#x', kind: 'held', attempt: 1 }, 'w/1', 'T');
    expect(event.url).toBe('https://***@a.example/h?token=***&page=***');
  });

  it('an invalid message: a dead event with reason invalid, attempt 0', () => {
    expect(outcomeEventOf({ kind: 'invalid', id: 'x', error: 'not JSON' }, 'w/1', 'T')).toMatchObject({
      type: 'dead',
      id: 'x',
      url: '',
      attempt: 0,
      reason: 'invalid',
      error: 'not JSON',
    });
  });
});

describe('outcomeTypeOf', () => {
  const callback = { id: 'c1', url: 'https://a.example/h', target: 'https://a.example', lane: '0', attempt: 1 };
  const tried = (decision: Extract<AttemptReport, { kind: 'attempt' }>['decision']): AttemptReport => ({
    ...callback,
    kind: 'attempt',
    outcome: { status: 503, durationMs: 3 },
    decision,
    nextAttemptAt: undefined,
  });

  it('is the type of the event the report makes, read without building the event', () => {
    const reports: AttemptReport[] = [
      { ...callback, kind: 'canceled' },
      { ...callback, kind: 'held' },
      { kind: 'invalid', id: 'x', error: 'not JSON' },
      tried({ kind: 'ack' }),
      tried({ kind: 'retry', delayMs: 1_000, attempt: 2, why: 'HTTP 503' }),
      tried({ kind: 'dead', reason: 'exhausted', why: 'HTTP 503' }),
    ];
    expect(reports.map(outcomeTypeOf)).toEqual(['canceled', 'paused', 'dead', 'delivered', 'retry-scheduled', 'dead']);
    for (const report of reports) expect(outcomeTypeOf(report)).toBe(outcomeEventOf(report, 'w/1', 'T').type);
  });
});
