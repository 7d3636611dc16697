import { describe, it, expect } from 'vitest';
import { TargetIsolation, type IsolationPolicy } from '../../../src/isolation/target-isolation.js';

const POLICY: IsolationPolicy = {
  window: 20,
  degradeThreshold: 10,
  recoverThreshold: 5,
  quietPeriodMs: 30_000,
  maxTargets: 10_000,
  capacity: 50,
  perTarget: 50,
  initialPerTarget: 2,
  probesPerTarget: 1,
  maxProbes: 2,
  slowThresholdMs: 3_000,
};

const fast500 = { status: 500, durationMs: 2 };
const hang = { error: 'TIMEOUT', durationMs: 5_000 };
const ok = { status: 200, durationMs: 5 };

/** Opens `target`'s circuit with slow results. */
function open(iso: TargetIsolation<number>, target: string, at = 0): void {
  for (let i = 0; i < POLICY.degradeThreshold; i += 1) {
    iso.offer(target, i);
    const next = iso.next();
    iso.complete(target, next?.kind ?? 'attempt', hang, at);
  }
}

describe('TargetIsolation', () => {
  it('counts fast failures as no harm: a target answering 500 at once keeps real attempts', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 100; i += 1) {
      expect(iso.offer('b', i)).toBe('queued');
      const next = iso.next();
      expect(next?.kind).toBe('attempt');
      expect(iso.complete('b', 'attempt', fast500, i).transition).toBeUndefined();
    }
    expect(iso.state('b')).toBe('healthy');
  });

  it('opens the circuit after DEGRADE_THRESHOLD slow results and fails what waits', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 30; i += 1) iso.offer('a', i);
    iso.offer('other', 0);
    const running = [iso.next(), iso.next(), iso.next()];
    expect(running.map((r) => r?.item)).toEqual([0, 0, 1]);
    iso.complete('other', 'attempt', ok, 0);
    let failed: number[] = [];
    for (let i = 0; i < POLICY.degradeThreshold; i += 1) {
      const effects = iso.overdue('a', i);
      if (effects.transition) {
        expect(effects.transition).toMatchObject({ target: 'a', from: 'healthy', to: 'degraded' });
        failed = effects.failFast;
      }
    }
    expect(failed).toEqual(Array.from({ length: 28 }, (_, i) => i + 2));
    // Attempts already running finish; their results are not counted twice.
    expect(iso.complete('a', 'attempt', hang, 20, true).transition).toBeUndefined();
  });

  it('while open: PROBE_CONCURRENCY probes per target, MAX_PROBES over all, every other item fails fast', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    open(iso, 'b');
    open(iso, 'c');
    expect(iso.offer('a', 1)).toBe('queued');
    expect(iso.offer('a', 2)).toBe('fail-fast');
    expect(iso.offer('b', 1)).toBe('queued');
    expect(iso.offer('c', 1)).toBe('fail-fast');
    const probe = iso.next();
    expect(probe).toMatchObject({ target: 'a', kind: 'probe' });
    iso.complete('a', 'probe', hang, 1_000);
    expect(iso.offer('a', 3)).toBe('queued');
  });

  it('closes the circuit once probes are fast and the quiet period has passed', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a', 0);
    let closedAt: number | undefined;
    for (let t = 1_000; t <= 60_000 && closedAt === undefined; t += 1_000) {
      expect(iso.offer('a', t)).toBe('queued');
      const probe = iso.next();
      expect(probe?.kind).toBe('probe');
      if (iso.complete('a', 'probe', ok, t).transition?.to === 'healthy') closedAt = t;
    }
    expect(closedAt).toBeGreaterThanOrEqual(POLICY.quietPeriodMs);
    expect(iso.offer('a', 0)).toBe('queued');
    expect(iso.next()?.kind).toBe('attempt');
  });

  it('one open circuit never delays another target', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    for (let i = 0; i < 100; i += 1) iso.offer('a', i);
    for (let i = 0; i < 10; i += 1) iso.offer('c', i);
    const started: string[] = [];
    for (let next = iso.next(); next; next = iso.next()) started.push(next.target);
    expect(started.filter((t) => t === 'c')).toHaveLength(2);
    expect(started.filter((t) => t === 'a')).toHaveLength(1);
  });

  it('drops the waiting items of a closed channel and keeps probe counts right', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    iso.offer('a', 7);
    expect(iso.drop((item) => item === 7)).toEqual([7]);
    expect(iso.offer('a', 8)).toBe('queued');
    expect(iso.waiting()).toBe(1);
    const next = iso.next();
    iso.abandon('a', next!.kind);
    expect(iso.inFlight()).toBe(0);
  });

  it('releases the probe of a waiting item dropped with its channel, so the circuit can still be probed', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 2; i += 1) iso.offer('a', i);
    const running = [iso.next(), iso.next()];
    expect(running.every((r) => r?.target === 'a')).toBe(true);
    for (let i = 0; i < POLICY.degradeThreshold; i += 1) iso.overdue('a', i);
    expect(iso.state('a')).toBe('degraded');
    expect(iso.offer('a', 99)).toBe('queued');
    expect(iso.next()).toBeUndefined();
    expect(iso.drop((item) => item === 99)).toEqual([99]);
    for (const r of running) iso.complete('a', r!.kind, hang, 20, true);
    expect(iso.offer('a', 100)).toBe('queued');
    expect(iso.next()?.kind).toBe('probe');
  });

  it('releases the probe of a waiting item taken out when the circuit opens again', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, probesPerTarget: 2, quietPeriodMs: 0 });
    open(iso, 'a');
    // Recover with fast probes, then open again while a probe still waits.
    for (let i = 0; i < 20 && iso.state('a') === 'degraded'; i += 1) {
      iso.offer('a', i);
      const probe = iso.next();
      iso.complete('a', probe!.kind, ok, 1_000 + i);
    }
    expect(iso.state('a')).toBe('healthy');
    open(iso, 'a', 2_000);
    expect(iso.state('a')).toBe('degraded');
    expect([iso.offer('a', 1), iso.offer('a', 2), iso.offer('a', 3)]).toEqual(['queued', 'queued', 'fail-fast']);
  });
});
