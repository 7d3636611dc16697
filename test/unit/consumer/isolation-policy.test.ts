import { describe, it, expect } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { isolationPolicy } from '../../../src/consumer/worker.js';
import { TargetIsolation } from '../../../src/policy/target-isolation.js';

describe('isolationPolicy', () => {
  it('maps the default configuration to the seed 002 policy', () => {
    expect(isolationPolicy(loadConfig({}))).toEqual({
      window: 20,
      degradeThreshold: 10,
      recoverThreshold: 5,
      quietPeriodMs: 30_000,
      maxTargets: 10_000,
      perTarget: 10,
      initialPerTarget: 2,
      probesPerTarget: 1,
      maxProbes: 10,
      slowThresholdMs: 3_000,
      successBody: '',
      waitingPerTarget: 10,
      maxWaiting: 90,
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
      SUCCESS_BODY: 'ok',
      SLOW_PREFETCH: '9',
      TARGET_INITIAL_CONCURRENCY: '5',
    });
    expect(isolationPolicy(config)).toEqual({
      window: 30,
      degradeThreshold: 12,
      recoverThreshold: 4,
      quietPeriodMs: 45_000,
      maxTargets: 777,
      perTarget: 6,
      initialPerTarget: 5,
      probesPerTarget: 2,
      maxProbes: 3,
      slowThresholdMs: 1_500,
      successBody: 'ok',
      waitingPerTarget: 6,
      maxWaiting: 34,
    });
  });

  it('uses the derived defaults of the configuration', () => {
    const policy = isolationPolicy(loadConfig({ PREFETCH: '25', DEGRADE_THRESHOLD: '7' }));
    expect(policy).toMatchObject({ perTarget: 3, maxProbes: 3, degradeThreshold: 7, recoverThreshold: 3 });
  });

  it.each([
    ['1', 1],
    ['2', 1],
    ['3', 2],
    ['100', 90],
    ['101', 90],
    ['65535', 58_981],
  ])('sizes the waiting room over all targets as PREFETCH − TARGET_CONCURRENCY, min 1 (PREFETCH=%s → %i)', (prefetch, waiting) => {
    expect(isolationPolicy(loadConfig({ PREFETCH: prefetch })).maxWaiting).toBe(waiting);
  });

  it('lets each target have as many messages waiting as it may have in flight (TARGET_CONCURRENCY)', () => {
    expect(isolationPolicy(loadConfig({ PREFETCH: '100' })).waitingPerTarget).toBe(10);
    expect(isolationPolicy(loadConfig({ PREFETCH: '7' })).waitingPerTarget).toBe(1);
    expect(isolationPolicy(loadConfig({ PREFETCH: '100', TARGET_CONCURRENCY: '3' })).waitingPerTarget).toBe(3);
  });

  it('takes no setting that is not part of the policy (slow lane prefetch, target key, on/off)', () => {
    const base = isolationPolicy(loadConfig({}));
    expect(isolationPolicy(loadConfig({ SLOW_PREFETCH: '99', TARGET_KEY: 'host', ISOLATION: 'off', OVERFLOW_DELAY: '5s' }))).toEqual(base);
  });

  it('does not share state between calls', () => {
    const config = loadConfig({});
    const a = isolationPolicy(config);
    const b = isolationPolicy(config);
    expect(a).toEqual(b);
    expect(a).not.toBe(b);
  });

  it('drives a TargetIsolation that follows the configured thresholds', () => {
    const iso = new TargetIsolation(isolationPolicy(loadConfig({ TARGET_CONCURRENCY: '2', HEALTH_WINDOW: '4', DEGRADE_THRESHOLD: '2', SLOW_THRESHOLD: '100ms' })));
    expect([iso.admit('t'), iso.admit('t'), iso.admit('t')].map((a) => a.kind)).toEqual(['deliver', 'deliver', 'wait']);
    expect(iso.slowThresholdMs).toBe(100);
    expect(iso.isAbnormal({ status: 200, durationMs: 100 })).toBe(true);
    expect(iso.complete('t', 'normal', { status: 200, durationMs: 100 }, 0)).toBeUndefined();
    expect(iso.complete('t', 'normal', { status: 200, durationMs: 100 }, 0)?.to).toBe('degraded');
  });
});
