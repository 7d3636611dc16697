import { describe, it, expect } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.js';
import { isolationPolicy, resolveWorkerSettings } from '../../../src/consumer/worker-settings.js';
import { ArrivalOrder } from '../../../src/isolation/scheduler.js';
import { TargetIsolation } from '../../../src/isolation/target-isolation.js';

describe('isolationPolicy', () => {
  it('maps the default configuration to the seed 002 policy (degraded at 5, the initial per-target limit), with no per-target cap', () => {
    expect(isolationPolicy(loadConfig({}))).toEqual({
      window: 20,
      degradeThreshold: 5,
      recoverThreshold: 2,
      quietPeriodMs: 30_000,
      maxTargets: 10_000,
      capacity: 100,
      perTarget: 100,
      initialPerTarget: 5,
      probesPerTarget: 1,
      maxProbes: 10,
      slowThresholdMs: 3_000,
      overflowAfterMs: 200,
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
      OVERFLOW_AFTER: '350ms',
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
      overflowAfterMs: 350,
    });
  });

  it('takes no setting that is not part of the policy (target key, on/off, lanes)', () => {
    const base = isolationPolicy(loadConfig({}));
    expect(isolationPolicy(loadConfig({ TARGET_KEY: 'host', ISOLATION: 'off', LANES: '3' }))).toEqual(base);
  });

  it('drives a TargetIsolation that follows the configured thresholds', () => {
    const iso = new TargetIsolation<number>(
      isolationPolicy(
        loadConfig({ PREFETCH: '4', TARGET_INITIAL_CONCURRENCY: '2', HEALTH_WINDOW: '4', DEGRADE_THRESHOLD: '2', SLOW_THRESHOLD: '100ms' }),
      ),
    );
    for (let i = 0; i < 6; i += 1) iso.offer('t', i, 'lane', 0);
    expect([iso.next()?.item, iso.next()?.item, iso.next()]).toEqual([0, 1, undefined]);
    expect(iso.slowThresholdMs).toBe(100);
    expect(iso.complete('t', 'attempt', { status: 503, durationMs: 100 }, 0).transition).toBeUndefined();
    const opened = iso.complete('t', 'attempt', { status: 503, durationMs: 100 }, 0);
    expect(opened.transition?.to).toBe('degraded');
    // The oldest waiting item (2) stays as the circuit's first probe.
    expect(opened.circuitOpen).toEqual([3, 4, 5]);
  });
});

describe('resolveWorkerSettings', () => {
  it('works each value out once, from the setting that names it', () => {
    const settings = resolveWorkerSettings(
      loadConfig({
        PREFETCH: '7',
        HTTP_TIMEOUT: '4s',
        RESPONSE_BODY_LIMIT: '123',
        MAX_PAYLOAD_BYTES: '4567',
        DRAIN_TIMEOUT: '9s',
        DUE_PREFETCH: '300',
        METRICS_PORT: '0',
        PUBLISH_TIMEOUT: '3s',
        SUCCESS_BODY: 'ok',
        RETRY_SCHEDULE: '1s,2s',
        EVENTS: 'durable',
      }),
    );
    expect(settings.consume).toEqual({
      prefetch: 7,
      queuePrefetch: 14,
      orderedPrefetch: 10,
      duePrefetch: 300,
      drainTimeoutMs: 9_000,
      metricsPort: 0,
      metricsHost: '127.0.0.1',
    });
    expect(settings.delivery).toEqual({ timeoutMs: 4_000, responseBodyLimit: 123, maxPayloadBytes: 4567, sign: undefined });
    expect(settings.retry).toMatchObject({ schedule: [1_000, 2_000], maxAttempts: 3, successBody: 'ok' });
    expect(settings).toMatchObject({ publishTimeoutMs: 3_000, events: 'durable', targetKey: 'origin' });
    expect(settings.policies?.byName.size).toBe(0);
    expect(settings.isolation?.capacity).toBe(7);
  });

  it('has no isolation policy when ISOLATION=off', () => {
    expect(resolveWorkerSettings(loadConfig({ ISOLATION: 'off' })).isolation).toBeUndefined();
  });

  it('parses the address policy once, naming the setting of a bad range', () => {
    expect(resolveWorkerSettings(loadConfig({ TARGET_POLICY: 'strict', TARGET_ALLOW: '10.0.0.0/8' })).addressPolicy).toMatchObject({
      strict: true,
      allow: [expect.anything()],
    });
  });
});

describe('ArrivalOrder (ISOLATION=off)', () => {
  it('attempts in arrival order across targets, capacity at a time, never failing fast', () => {
    const order = new ArrivalOrder<number>(2);
    expect([order.offer('a', 1), order.offer('b', 2), order.offer('a', 3)]).toEqual(['queued', 'queued', 'queued']);
    expect([order.next()?.item, order.next()?.item, order.next()]).toEqual([1, 2, undefined]);
    expect(order.complete()).toEqual({ transition: undefined, circuitOpen: [] });
    expect(order.next()).toMatchObject({ item: 3, kind: 'attempt' });
    expect(order.slowThresholdMs).toBeUndefined();
  });

  it('drops waiting items that match, and an abandoned slot is free again', () => {
    const order = new ArrivalOrder<number>(1);
    for (const i of [1, 2, 3]) order.offer('t', i);
    order.next();
    expect(order.drop((i) => i === 2)).toEqual([2]);
    order.abandon();
    expect(order.next()?.item).toBe(3);
  });
});
