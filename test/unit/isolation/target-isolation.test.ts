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
  overflowAfterMs: 200,
};

const fast500 = { status: 500, durationMs: 2 };
const hang = { error: 'TIMEOUT', durationMs: 5_000 };
const ok = { status: 200, durationMs: 5 };

/** Opens `target`'s circuit with slow results. */
function open(iso: TargetIsolation<number>, target: string, at = 0): void {
  for (let i = 0; i < POLICY.degradeThreshold; i += 1) {
    iso.offer(target, i, 'lane', 0);
    const next = iso.next();
    iso.complete(target, next?.kind ?? 'attempt', hang, at);
  }
}

describe('TargetIsolation', () => {
  it('counts fast failures as no harm: a target answering 500 at once keeps real attempts', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 100; i += 1) {
      expect(iso.offer('b', i, 'lane', 0)).toBe('queued');
      const next = iso.next();
      expect(next?.kind).toBe('attempt');
      expect(iso.complete('b', 'attempt', fast500, i).transition).toBeUndefined();
    }
    expect(iso.state('b')).toBe('healthy');
  });

  it('counts an overdue attempt of a target that answered lately only when it ends: a loaded moment is no sickness', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, degradeThreshold: 3, initialPerTarget: 5 });
    iso.offer('busy', 0, 'lane', 0);
    iso.complete('busy', iso.next()!.kind, ok, 10);
    for (let i = 1; i <= 5; i += 1) iso.offer('busy', i, 'lane', 20);
    const running = [iso.next(), iso.next(), iso.next(), iso.next()];
    // Four attempts pass the threshold: not counted yet, and the target keeps its circuit closed.
    for (let i = 0; i < running.length; i += 1)
      expect(iso.overdue('busy', 3_100 + i, 'attempt')).toEqual({ transition: undefined, circuitOpen: [] });
    expect(iso.state('busy')).toBe('healthy');
    // They end in a success (amended nothing, no slow failure) or in timeouts, which count then.
    iso.complete('busy', running[0]!.kind, { status: 200, durationMs: 3_500 }, 3_600, { wasOverdue: true });
    iso.complete('busy', running[1]!.kind, hang, 5_100, { wasOverdue: true });
    iso.complete('busy', running[2]!.kind, hang, 5_100, { wasOverdue: true });
    expect(iso.state('busy')).toBe('healthy');
    expect(iso.complete('busy', running[3]!.kind, hang, 5_100, { wasOverdue: true }).transition).toMatchObject({ to: 'degraded' });
  });

  it('opens the circuit after DEGRADE_THRESHOLD slow results and defers what waits, but for its first probe', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 30; i += 1) iso.offer('a', i, 'lane', 0);
    iso.offer('other', 0, 'lane', 0);
    const running = [iso.next(), iso.next(), iso.next()];
    expect(running.map((r) => r?.item)).toEqual([0, 0, 1]);
    iso.complete('other', 'attempt', ok, 0);
    let failed: number[] = [];
    for (let i = 0; i < POLICY.degradeThreshold; i += 1) {
      const effects = iso.overdue('a', i, 'attempt');
      if (effects.transition) {
        expect(effects.transition).toMatchObject({ target: 'a', from: 'healthy', to: 'degraded' });
        failed = effects.circuitOpen;
      }
    }
    // The oldest waiting item (2) stays as the circuit's first probe, at once.
    expect(failed).toEqual(Array.from({ length: 27 }, (_, i) => i + 3));
    expect(iso.next()).toMatchObject({ target: 'a', item: 2, kind: 'probe' });
    // Attempts already running finish; their results are not counted twice.
    expect(iso.complete('a', 'attempt', hang, 20, { wasOverdue: true }).transition).toBeUndefined();
  });

  it('while open: PROBE_CONCURRENCY probes per target, MAX_PROBES over all, every other item is deferred', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    open(iso, 'b');
    open(iso, 'c');
    expect(iso.offer('a', 1, 'lane', 0)).toBe('queued');
    expect(iso.offer('a', 2, 'lane', 0)).toBe('circuit-open');
    expect(iso.offer('b', 1, 'lane', 0)).toBe('queued');
    expect(iso.offer('c', 1, 'lane', 0)).toBe('circuit-open');
    const probe = iso.next();
    expect(probe).toMatchObject({ target: 'a', kind: 'probe' });
    iso.complete('a', 'probe', hang, 1_000);
    expect(iso.offer('a', 3, 'lane', 0)).toBe('queued');
  });

  it('a probe past the slow threshold makes room for the next one, in PROBE_CONCURRENCY and in MAX_PROBES', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    expect(iso.offer('a', 1, 'lane', 10_000)).toBe('queued');
    expect(iso.next()).toMatchObject({ item: 1, kind: 'probe' });
    expect(iso.offer('a', 2, 'lane', 11_000)).toBe('circuit-open');
    // Unanswered at the slow threshold: the receiver still hangs, a new probe may find it back sooner.
    iso.overdue('a', 13_000, 'probe');
    expect(iso.offer('a', 2, 'lane', 13_000)).toBe('queued');
    expect(iso.next()).toMatchObject({ item: 2, kind: 'probe' });
    // Two probes in flight, one of them stale: MAX_PROBES (2) counts the fresh one only.
    open(iso, 'b');
    expect(iso.offer('b', 1, 'lane', 13_500)).toBe('queued');
    open(iso, 'c');
    expect(iso.offer('c', 1, 'lane', 13_600)).toBe('circuit-open');
    // The stale probe times out: a's place stays taken by its fresh probe.
    iso.complete('a', 'probe', hang, 15_000, { wasOverdue: true });
    expect(iso.offer('a', 3, 'lane', 15_000)).toBe('circuit-open');
    // The fresh probe succeeds: the circuit closes.
    expect(iso.complete('a', 'probe', ok, 15_100).transition).toMatchObject({ to: 'healthy' });
  });

  it('closes the circuit on the first successful probe, however slow', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a', 0);
    expect(iso.offer('a', 1, 'lane', 1_000)).toBe('queued');
    expect(iso.next()?.kind).toBe('probe');
    expect(iso.complete('a', 'probe', { status: 200, durationMs: 4_000 }, 5_000).transition).toMatchObject({
      from: 'degraded',
      to: 'healthy',
    });
    expect(iso.offer('a', 2, 'lane', 5_000)).toBe('queued');
    expect(iso.next()?.kind).toBe('attempt');
  });

  it('a flapping target needs twice the successes in a row each time it opens again within QUIET_PERIOD', () => {
    const iso = new TargetIsolation<number>(POLICY);
    const probe = (at: number, outcome: { status?: number; error?: string; durationMs: number }) => {
      iso.offer('a', at, 'lane', at);
      const next = iso.next();
      return iso.complete('a', next!.kind, outcome, at).transition;
    };
    const required: number[] = [];
    let at = 0;
    for (let round = 0; round < 6; round += 1) {
      open(iso, 'a', at);
      let successes = 0;
      while (iso.state('a') === 'degraded') {
        at += 1_000;
        probe(at, ok);
        successes += 1;
      }
      required.push(successes);
      at += 1_000;
    }
    expect(required).toEqual([1, 2, 4, 8, 16, 16]);
    // Opened again after a quiet period: one success is enough once more.
    open(iso, 'a', at + POLICY.quietPeriodMs);
    expect(probe(at + POLICY.quietPeriodMs + 1, ok)?.to).toBe('healthy');
  });

  it('a failed probe resets the run of successes', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a', 0);
    iso.complete('a', 'attempt', ok, 1); // closes: one success
    open(iso, 'a', 2); // flapping: needs 2
    for (const outcome of [ok, hang, ok]) {
      iso.offer('a', 0, 'lane', 3);
      iso.complete('a', iso.next()!.kind, outcome, 3);
    }
    expect(iso.state('a')).toBe('degraded');
    iso.offer('a', 0, 'lane', 4);
    expect(iso.complete('a', iso.next()!.kind, ok, 4).transition?.to).toBe('healthy');
  });

  it('a slow success is no failure: a target answering 200 after 3.5 s never opens its circuit', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 100; i += 1) {
      iso.offer('s', i, 'lane', i * 4_000);
      const next = iso.next();
      if (i < 3) iso.overdue('s', i * 4_000 + 3_000, 'attempt');
      iso.complete('s', next!.kind, { status: 200, durationMs: 3_500 }, i * 4_000 + 3_500, { wasOverdue: i < 3 });
      expect(iso.state('s')).toBe('healthy');
    }
  });

  it('counts a running attempt abnormal once it passes SLOW_THRESHOLD, and takes it back when it succeeds', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, degradeThreshold: 3 });
    for (let i = 0; i < 3; i += 1) iso.offer('s', i, 'lane', 0);
    const running = [iso.next(), iso.next()];
    iso.overdue('s', 3_000, 'attempt');
    expect(iso.overdue('s', 3_000, 'attempt').transition).toBeUndefined();
    // Third result: a slow success. The two overdue ones are amended as they succeed too.
    expect(iso.complete('s', running[0]!.kind, { status: 200, durationMs: 3_500 }, 3_500, { wasOverdue: true }).transition).toBeUndefined();
    // Now the target is known to work slowly: an overdue attempt is not counted early.
    iso.offer('s', 9, 'lane', 3_500);
    expect(iso.overdue('s', 6_500, 'attempt')).toEqual({ transition: undefined, circuitOpen: [] });
    expect(iso.state('s')).toBe('healthy');
  });

  it('one open circuit never delays another target', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    for (let i = 0; i < 100; i += 1) iso.offer('a', i, 'lane', 0);
    for (let i = 0; i < 10; i += 1) iso.offer('c', i, 'lane', 0);
    const started: string[] = [];
    for (let next = iso.next(); next; next = iso.next()) started.push(next.target);
    expect(started.filter((t) => t === 'c')).toHaveLength(2);
    expect(started.filter((t) => t === 'a')).toHaveLength(1);
  });

  it('drops the waiting items of a closed channel and keeps probe counts right', () => {
    const iso = new TargetIsolation<number>(POLICY);
    open(iso, 'a');
    iso.offer('a', 7, 'lane', 0);
    expect(iso.drop((item) => item === 7)).toEqual([7]);
    expect(iso.offer('a', 8, 'lane', 0)).toBe('queued');
    expect(iso.waiting()).toBe(1);
    const next = iso.next();
    iso.abandon('a', next!.kind);
    expect(iso.inFlight()).toBe(0);
  });

  it('a stop drops everything waiting at once: probes released, counters at zero once the running attempts end', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, capacity: 4 });
    open(iso, 'a');
    for (let i = 0; i < 6; i += 1) for (const target of ['b', 'c']) iso.offer(target, i, 'lane', 0);
    const running = [iso.next(), iso.next(), iso.next(), iso.next()];
    expect(iso.offer('a', 99, 'lane', 0)).toBe('queued');
    expect(iso.waiting()).toBe(9);
    expect(iso.drop(() => true)).toHaveLength(9);
    expect(iso.waiting()).toBe(0);
    expect(iso.inFlight()).toBe(4);
    expect(iso.next()).toBeUndefined();
    for (const r of running) iso.complete(r!.target, r!.kind, ok, 10);
    expect(iso.inFlight()).toBe(0);
    expect(iso.sweep(10_000)).toEqual([]);
    // The dropped probe's place is free again.
    expect(iso.offer('a', 100, 'lane', 10)).toBe('queued');
    expect(iso.next()?.kind).toBe('probe');
  });

  it('releases the probe of a waiting item dropped with its channel, so the circuit can still be probed', () => {
    // Two slots in all, both held: the probe waits (with idle slots it would borrow one at once).
    const iso = new TargetIsolation<number>({ ...POLICY, capacity: 2 });
    for (let i = 0; i < 2; i += 1) iso.offer('a', i, 'lane', 0);
    const running = [iso.next(), iso.next()];
    expect(running.every((r) => r?.target === 'a')).toBe(true);
    for (let i = 0; i < POLICY.degradeThreshold; i += 1) iso.overdue('a', i, 'attempt');
    expect(iso.state('a')).toBe('degraded');
    expect(iso.offer('a', 99, 'lane', 0)).toBe('queued');
    expect(iso.next()).toBeUndefined();
    expect(iso.drop((item) => item === 99)).toEqual([99]);
    for (const r of running) iso.complete('a', r!.kind, hang, 20, { wasOverdue: true });
    expect(iso.offer('a', 100, 'lane', 0)).toBe('queued');
    expect(iso.next()?.kind).toBe('probe');
  });

  it('releases the probe of a waiting item taken out when the circuit opens again', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, probesPerTarget: 2, quietPeriodMs: 0 });
    open(iso, 'a');
    // Recover with fast probes, then open again while a probe still waits.
    for (let i = 0; i < 20 && iso.state('a') === 'degraded'; i += 1) {
      iso.offer('a', i, 'lane', 0);
      const probe = iso.next();
      iso.complete('a', probe!.kind, ok, 1_000 + i);
    }
    expect(iso.state('a')).toBe('healthy');
    open(iso, 'a', 2_000);
    expect(iso.state('a')).toBe('degraded');
    expect([iso.offer('a', 1, 'lane', 0), iso.offer('a', 2, 'lane', 0), iso.offer('a', 3, 'lane', 0)]).toEqual([
      'queued',
      'queued',
      'circuit-open',
    ]);
  });
});
