import { describe, expect, it } from 'vitest';
import { parseHistoryArgs } from '../../../src/cli/parse-history-args.js';
import { UsageError } from '../../../src/cli/usage-error.js';
import type { OutcomeEvent } from '../../../src/events/outcome-events.js';
import { formatTimelineLine } from '../../../src/history/format-timeline.js';

describe('parseHistoryArgs', () => {
  it('a lookup: one id, --since as a duration, --json', () => {
    expect(parseHistoryArgs(['order-42', '--since', '1h', '--json'])).toEqual({
      action: 'lookup',
      id: 'order-42',
      sinceMs: 3_600_000,
      json: true,
    });
    expect(parseHistoryArgs(['order-42'])).toEqual({ action: 'lookup', id: 'order-42', sinceMs: undefined, json: false });
  });

  it('--follow, narrowed to an origin', () => {
    expect(parseHistoryArgs(['--follow', '--target', 'https://partner.example'])).toEqual({
      action: 'follow',
      target: 'https://partner.example',
      sinceMs: undefined,
      json: false,
    });
  });

  it.each([
    [['a', 'b'], /one callback id/],
    [['--follow', 'a'], /takes no callback id/],
    [['a', '--target', 'https://x.example'], /only with --follow/],
    [['--follow', '--target', 'partner.example'], /--target: must be an origin/],
    [['--follow', '--target', 'https://x.example/path'], /--target: must be an origin/],
    [['a', '--since', '90'], /--since/],
    [['a', '--since', 'soon'], /--since/],
    [['a', '--bogus'], /bogus/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseHistoryArgs(argv)).toThrow(UsageError);
    expect(() => parseHistoryArgs(argv)).toThrow(message);
  });
});

describe('formatTimelineLine', () => {
  const event: OutcomeEvent = {
    type: 'retry-scheduled',
    id: 'order-42',
    url: 'https://partner.example/hook',
    attempt: 2,
    status: 503,
    error: 'HTTP 503',
    nextAttemptAt: '2026-01-01T00:00:30.000Z',
    reason: undefined,
    durationMs: 120.4,
    worker: 'host-a/17',
    at: '2026-01-01T00:00:00.000Z',
  };

  it('time, attempt, type, status, duration, worker, next attempt', () => {
    expect(formatTimelineLine(event)).toBe(
      '2026-01-01T00:00:00.000Z  attempt 2  retry-scheduled  HTTP 503  120ms  host-a/17  next 2026-01-01T00:00:30.000Z',
    );
  });

  it('an attempt failed fast on an open circuit shows its error and the reason of a dead one', () => {
    const line = formatTimelineLine(
      { ...event, type: 'dead', status: undefined, error: 'circuit open', durationMs: 0, nextAttemptAt: undefined, reason: 'exhausted' },
      true,
    );
    expect(line).toBe(
      '2026-01-01T00:00:00.000Z  order-42  https://partner.example/hook  attempt 2  dead (exhausted)  circuit open  0ms  host-a/17',
    );
  });

  it('control characters of the URL, the error and the worker become spaces, as in dlq list', () => {
    const hostile = {
      ...event,
      url: 'https://x.example/\u001b[2J\u001b[31mowned',
      error: 'ECONNRESET\r\u009b0m',
      status: undefined,
      worker: 'w\u0007',
    };
    const line = formatTimelineLine(hostile, true);
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    // The URL is masked first (maskUrl), whose parser percent-encodes control characters.
    expect(line).toContain('https://x.example/%1B[2J%1B[31mowned');
    expect(line).toContain('ECONNRESET  0m');
  });

  it('shows the URL masked, even of an event stored unmasked', () => {
    const line = formatTimelineLine({ ...event, url: 'https://user:pw@x.example/hook?token=abc#f' }, true);
    expect(line).toContain('https://***@x.example/hook?token=***');
    expect(line).not.toContain('abc');
    expect(line).not.toContain('pw');
  });

  it('a callback held for its paused target: no status, no duration', () => {
    const line = formatTimelineLine({
      ...event,
      type: 'paused',
      attempt: 0,
      status: undefined,
      error: undefined,
      durationMs: undefined,
      nextAttemptAt: undefined,
    });
    expect(line).toBe('2026-01-01T00:00:00.000Z  attempt 0  paused  -  -  host-a/17');
  });
});
