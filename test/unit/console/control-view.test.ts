import { describe, expect, it } from 'vitest';
import { ControlView } from '../../../src/console/control-view.js';
import { healthKeys, targetRows } from '../../../src/console/target-rows.js';
import type { TargetStats } from '../../../src/console/event-window.js';

const T0 = Date.parse('2026-01-31T12:00:00Z');
const at = (ms: number): string => new Date(ms).toISOString();

describe('ControlView', () => {
  it('a pause lasts until its resume; a circuit is open while a worker last said degraded within the window', () => {
    let now = T0;
    const view = new ControlView({ windowMs: 3_600_000, maxTargets: 10 }, () => now, 30 * 86_400_000);
    view.apply({ type: 'pause', origin: 'https://a.example', at: at(T0 - 86_400_000), by: 'operator' });
    view.apply({ type: 'degraded', target: 'https://b.example', from: 'w1', at: at(T0 - 1000) });
    view.apply({ type: 'degraded', target: 'c.example', from: 'w1', at: at(T0 - 1000) });
    view.apply({ type: 'recovered', target: 'c.example', from: 'w1', at: at(T0 - 500) });
    expect(view.stateOf('https://a.example')).toBe('paused');
    expect(view.stateOf('https://b.example')).toBe('circuit open');
    expect(view.stateOf('https://c.example', healthKeys('https://c.example'))).toBe('healthy');
    view.apply({ type: 'degraded', target: 'c.example', from: 'w2', at: at(T0) });
    expect(view.stateOf('https://c.example', healthKeys('https://c.example'))).toBe('circuit open');
    view.apply({ type: 'resume', origin: 'https://a.example', at: at(T0) });
    expect(view.stateOf('https://a.example')).toBe('healthy');
    // A worker that died degraded says nothing more: its word lapses with the window.
    now = T0 + 3_600_001;
    expect(view.stateOf('https://b.example')).toBe('healthy');
  });

  it("a target with an operator's limit is limited until the limit is cleared; a pause or an open circuit says more", () => {
    const view = new ControlView({ windowMs: 3_600_000, maxTargets: 10 }, () => T0, 30 * 86_400_000);
    view.apply({ type: 'limit', origin: 'https://l.example', at: at(T0 - 1000), limit: { rate: 20, burst: 2 } });
    expect(view.stateOf('https://l.example')).toBe('limited');
    view.apply({ type: 'degraded', target: 'https://l.example', from: 'w1', at: at(T0 - 500) });
    expect(view.stateOf('https://l.example')).toBe('circuit open');
    view.apply({ type: 'recovered', target: 'https://l.example', from: 'w1', at: at(T0 - 400) });
    view.apply({ type: 'limit', origin: 'https://l.example', at: at(T0), limit: null });
    expect(view.stateOf('https://l.example')).toBe('healthy');
  });

  it('keeps the broadcasts of at most maxTargets targets', () => {
    const view = new ControlView({ windowMs: 3_600_000, maxTargets: 1 }, () => T0, 30 * 86_400_000);
    view.apply({ type: 'degraded', target: 'https://a.example', from: 'w1', at: at(T0) });
    view.apply({ type: 'degraded', target: 'https://b.example', from: 'w1', at: at(T0) });
    expect(view.stateOf('https://a.example')).toBe('healthy');
    expect(view.stateOf('https://b.example')).toBe('circuit open');
  });
});

describe('targetRows', () => {
  const stats = (origin: string, delivered: number, failed: number): TargetStats => ({
    origin,
    delivered,
    retries: failed,
    dead: 0,
    held: 0,
    successRate: delivered + failed === 0 ? null : delivered / (delivered + failed),
    p50Ms: null,
    p95Ms: null,
    lastError: null,
    lastSeen: at(T0),
  });

  it('sorts by trouble: paused, circuit open, then failure rate, then failures; lists a paused origin without events', () => {
    const rows = targetRows(
      [
        stats('https://ok.example', 10, 0),
        stats('https://half.example', 5, 5),
        stats('https://down.example', 0, 3),
        stats('https://down2.example', 0, 9),
        stats('https://open.example', 9, 1),
      ],
      ['https://held.example'],
      (origin) => (origin === 'https://held.example' ? 'paused' : origin === 'https://open.example' ? 'circuit open' : 'healthy'),
    );
    expect(rows.map((row) => row.origin)).toEqual([
      'https://held.example',
      'https://open.example',
      'https://down2.example',
      'https://down.example',
      'https://half.example',
      'https://ok.example',
    ]);
    expect(rows[0]).toMatchObject({ delivered: 0, successRate: null, state: 'paused' });
  });
});
