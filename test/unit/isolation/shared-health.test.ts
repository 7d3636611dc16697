import { describe, expect, it } from 'vitest';
import { parseMarker, encodeMarker } from '../../../src/control/control-markers.js';
import { EndpointHealth } from '../../../src/isolation/health.js';
import { TargetIsolation, type IsolationPolicy } from '../../../src/isolation/target-isolation.js';

const POLICY: IsolationPolicy = {
  window: 10,
  degradeThreshold: 4,
  recoverThreshold: 1,
  quietPeriodMs: 1_000,
  maxTargets: 100,
  capacity: 10,
  perTarget: 10,
  initialPerTarget: 10,
  probesPerTarget: 1,
  maxProbes: 2,
  slowThresholdMs: 300,
  overflowAfterMs: 200,
};
const T = 'https://a.example';

describe('a circuit transition shared by another worker', () => {
  it('opens the circuit at once, marked shared, and stays open for a quiet period before own probes close it', () => {
    const health = new EndpointHealth(POLICY);
    expect(health.force(T, 'degraded', 0)).toEqual({ target: T, from: 'healthy', to: 'degraded', abnormal: 0, seen: 0, shared: true });
    expect(health.force(T, 'degraded', 10)).toBeUndefined();
    expect(health.record(T, false, 500)).toBeUndefined();
    expect(health.record(T, false, 1_000)).toMatchObject({ to: 'healthy' });
    expect(health.record(T, false, 1_000)?.shared).toBeUndefined();
  });

  it('a shared recovery starts the window afresh, so older slow results do not reopen it at once', () => {
    const health = new EndpointHealth(POLICY);
    for (let i = 0; i < 4; i += 1) health.record(T, true, 0);
    expect(health.state(T)).toBe('degraded');
    expect(health.force(T, 'healthy', 10)).toMatchObject({ to: 'healthy', shared: true });
    expect(health.record(T, true, 20)).toBeUndefined();
    expect(health.state(T)).toBe('healthy');
  });

  it('defers what waits for a slot of a target whose circuit another worker opened', () => {
    const iso = new TargetIsolation<number>(POLICY);
    iso.offer(T, 1, 'lane', 0);
    iso.offer(T, 2, 'lane', 0);
    const effects = iso.shareHealth(T, 'degraded', 0);
    expect(effects.transition?.shared).toBe(true);
    // The oldest stays as the circuit's first probe; the other is deferred.
    expect(effects.circuitOpen).toEqual([2]);
    expect(iso.offer(T, 3, 'lane', 0)).toBe('circuit-open');
    expect(iso.next()).toMatchObject({ item: 1, kind: 'probe' });
  });

  it('travels as a degraded or recovered marker naming its sender', () => {
    const marker = { type: 'degraded', target: T, from: 'reader-1', at: '2026-01-01T00:00:00.000Z' } as const;
    expect(parseMarker(encodeMarker(marker))).toEqual(marker);
    expect(parseMarker(Buffer.from('{"type":"recovered","target":"x","at":"2026-01-01T00:00:00Z"}'))).toBeUndefined();
  });
});
