import { describe, expect, it } from 'vitest';
import { whereNow } from '../../../src/console/callback-timeline.js';
import type { OutcomeEvent, OutcomeType } from '../../../src/events/outcome-events.js';

const T0 = Date.parse('2026-01-31T12:00:00Z');
const event = (type: OutcomeType, extra: Partial<OutcomeEvent> = {}): OutcomeEvent => ({
  type,
  id: 'cb',
  url: 'https://a.example/',
  attempt: 2,
  status: undefined,
  error: undefined,
  nextAttemptAt: undefined,
  reason: undefined,
  durationMs: undefined,
  worker: 'w/1',
  at: new Date(T0).toISOString(),
  ...extra,
});

describe('whereNow', () => {
  it('says where a callback is from its last event, and whether a cancel could still stop it', () => {
    expect(whereNow([event('retry-scheduled'), event('delivered')], false, T0)).toEqual({
      text: `delivered at ${new Date(T0).toISOString()} (attempt 2)`,
      pending: false,
    });
    expect(whereNow([event('dead', { reason: 'exhausted' })], false, T0)).toMatchObject({
      text: expect.stringContaining('exhausted'),
      pending: false,
    });
    expect(whereNow([event('canceled')], false, T0).pending).toBe(false);
    expect(whereNow([event('paused')], false, T0)).toMatchObject({ text: expect.stringContaining('paused'), pending: true });
    const retry = event('retry-scheduled', { nextAttemptAt: new Date(T0 + 30_000).toISOString() });
    expect(whereNow([retry], false, T0)).toEqual({ text: `waiting for attempt 3 at ${retry.nextAttemptAt} (in 30 s)`, pending: true });
    expect(whereNow([retry], true, T0)).toMatchObject({ text: expect.stringContaining('cancel marker'), pending: false });
    expect(whereNow([], false, T0)).toMatchObject({ pending: true });
  });
});
