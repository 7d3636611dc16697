import { describe, expect, it } from 'vitest';
import { EventWindow, LATENCY_SAMPLES } from '../../../src/console/event-window.js';
import type { OutcomeEvent, OutcomeType } from '../../../src/events/outcome-events.js';

const T0 = Date.parse('2026-01-31T12:00:00Z');
const event = (type: OutcomeType, url: string, atMs: number, extra: Partial<OutcomeEvent> = {}): OutcomeEvent => ({
  type,
  id: 'cb',
  url,
  attempt: 1,
  status: type === 'delivered' ? 200 : 503,
  error: type === 'delivered' ? undefined : 'HTTP 503',
  nextAttemptAt: undefined,
  reason: type === 'dead' ? 'exhausted' : undefined,
  durationMs: 10,
  worker: 'w/1',
  at: new Date(atMs).toISOString(),
  ...extra,
});

describe('EventWindow', () => {
  it('counts deliveries, retries and dead letters per minute over the window, zeros included', () => {
    let now = T0 + 30_000;
    const window = new EventWindow({ windowMs: 5 * 60_000, maxTargets: 10 }, () => now);
    window.add(event('delivered', 'https://a.example/x', T0 - 30_000));
    window.add(event('retry-scheduled', 'https://a.example/x', T0 - 30_000));
    window.add(event('dead', 'https://a.example/x', T0 + 10_000));
    window.add(event('canceled', 'https://a.example/x', T0 + 10_000));
    window.add(event('delivered', 'https://a.example/x', T0 - 10 * 60_000));
    const series = window.series();
    expect(series).toHaveLength(5);
    expect(series.map((row) => [row.delivered, row.retries, row.dead])).toEqual([
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
      [1, 1, 0],
      [0, 0, 2],
    ]);
    expect(window.throughput()).toEqual({ current: 0, previous: 1 });
    now = T0 + 10 * 60_000;
    expect(window.series().every((row) => row.delivered + row.retries + row.dead === 0)).toBe(true);
    expect(window.targetCount).toBe(0);
  });

  it('per origin: success rate, percentiles of the durations, last error; an invalid message has no origin', () => {
    const window = new EventWindow({ windowMs: 3_600_000, maxTargets: 10 }, () => T0);
    for (let i = 1; i <= 100; i += 1) window.add(event('delivered', 'https://a.example/x', T0 - 1000, { durationMs: i }));
    window.add(event('retry-scheduled', 'https://b.example/y', T0 - 3000, { status: 500, error: 'HTTP 500' }));
    window.add(event('dead', 'https://b.example/z', T0 - 2000, { status: undefined, error: 'connect ECONNREFUSED' }));
    window.add(event('delivered', 'https://b.example/z', T0 - 1000));
    window.add(event('dead', '', T0 - 1000, { reason: 'invalid' }));
    const stats = Object.fromEntries(window.targetStats().map((row) => [row.origin, row]));
    expect(Object.keys(stats).sort()).toEqual(['https://a.example', 'https://b.example']);
    expect(stats['https://a.example']).toMatchObject({ delivered: 100, successRate: 1, p50Ms: 50, p95Ms: 95, lastError: null });
    expect(stats['https://b.example']).toMatchObject({ delivered: 1, retries: 1, dead: 1, successRate: 1 / 3 });
    expect(stats['https://b.example']?.lastError?.text).toBe('connect ECONNREFUSED');
  });

  it('keeps at most maxTargets origins, forgetting the one seen longest ago', () => {
    const window = new EventWindow({ windowMs: 3_600_000, maxTargets: 2 }, () => T0);
    window.add(event('delivered', 'https://a.example/', T0 - 3000));
    window.add(event('delivered', 'https://b.example/', T0 - 2000));
    window.add(event('delivered', 'https://a.example/', T0 - 1500));
    window.add(event('delivered', 'https://c.example/', T0 - 1000));
    expect(
      window
        .targetStats()
        .map((row) => row.origin)
        .sort(),
    ).toEqual(['https://a.example', 'https://c.example']);
    expect(window.forgottenTargets).toBe(1);
  });

  it('keeps a bounded number of latency samples per origin', () => {
    const window = new EventWindow({ windowMs: 3_600_000, maxTargets: 2 }, () => T0);
    for (let i = 0; i < LATENCY_SAMPLES * 3; i += 1)
      window.add(event('delivered', 'https://a.example/', T0 - 1000, { durationMs: i < LATENCY_SAMPLES * 2 ? 1_000 : 1 }));
    expect(window.targetStats()[0]).toMatchObject({ p50Ms: 1, p95Ms: 1, delivered: LATENCY_SAMPLES * 3 });
  });
});
