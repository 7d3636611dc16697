import { describe, it, expect } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { isolationPolicy } from '../../../src/consumer/worker.js';
import { TargetIsolation } from '../../../src/isolation/target-isolation.js';

describe('isolationPolicy', () => {
  it('maps the default configuration to the seed 002 policy, with no per-target cap', () => {
    expect(isolationPolicy(loadConfig({}))).toEqual({
      window: 20,
      degradeThreshold: 10,
      recoverThreshold: 5,
      quietPeriodMs: 30_000,
      maxTargets: 10_000,
      capacity: 100,
      perTarget: 100,
      initialPerTarget: 5,
      probesPerTarget: 1,
      maxProbes: 10,
      slowThresholdMs: 3_000,
    });
  });

  it('maps every setting to its own field (all values distinct, so a swap would show)', () => {
    const config = loadConfig({
      PREFETCH: '40',
      HEALTH_WINDOW: '30',
      DEGRADE_THRESHOLD: '12',
      RECOVER_THRESHOLD: '4',
      QUIET_PERIOD: '45s',
      HEALTH_MAX_TARGETS: '777',
      TARGET_CONCURRENCY: '6',
      PROBE_CONCURRENCY: '2',
      MAX_PROBES: '3',
      SLOW_THRESHOLD: '1500ms',
      TARGET_INITIAL_CONCURRENCY: '5',
    });
    expect(isolationPolicy(config)).toEqual({
      window: 30,
      degradeThreshold: 12,
      recoverThreshold: 4,
      quietPeriodMs: 45_000,
      maxTargets: 777,
      capacity: 40,
      perTarget: 6,
      initialPerTarget: 5,
      probesPerTarget: 2,
      maxProbes: 3,
      slowThresholdMs: 1_500,
    });
  });

  it('takes no setting that is not part of the policy (target key, on/off, lanes)', () => {
    const base = isolationPolicy(loadConfig({}));
    expect(isolationPolicy(loadConfig({ TARGET_KEY: 'host', ISOLATION: 'off', LANES: '3' }))).toEqual(base);
  });

  it('drives a TargetIsolation that follows the configured thresholds', () => {
    const iso = new TargetIsolation<number>(isolationPolicy(loadConfig({ PREFETCH: '4', TARGET_INITIAL_CONCURRENCY: '2', HEALTH_WINDOW: '4', DEGRADE_THRESHOLD: '2', SLOW_THRESHOLD: '100ms' })));
    for (let i = 0; i < 6; i += 1) iso.offer('t', i);
    expect([iso.next()?.item, iso.next()?.item, iso.next()]).toEqual([0, 1, undefined]);
    expect(iso.slowThresholdMs).toBe(100);
    expect(iso.complete('t', 'attempt', { status: 200, durationMs: 100 }, 0).transition).toBeUndefined();
    const opened = iso.complete('t', 'attempt', { status: 200, durationMs: 100 }, 0);
    expect(opened.transition?.to).toBe('degraded');
    expect(opened.failFast).toEqual([2, 3, 4, 5]);
  });
});
