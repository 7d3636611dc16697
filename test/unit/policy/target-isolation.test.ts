import { describe, it, expect } from 'vitest';
import type { DeliveryOutcome } from '../../../src/policy/classify-outcome.js';
import type { Transition } from '../../../src/policy/endpoint-health.js';
import { TargetIsolation, targetOf, type Admission, type IsolationPolicy } from '../../../src/policy/target-isolation.js';
import { SEED_002_POLICY } from '../_helpers/isolation-policy.js';

const POLICY = SEED_002_POLICY;
const T = 'https://hooks.example';
const isolation = (overrides: Partial<IsolationPolicy> = {}): TargetIsolation => new TargetIsolation({ ...POLICY, ...overrides });

const ok: DeliveryOutcome = { status: 200, durationMs: 20 };
const fail: DeliveryOutcome = { status: 503, durationMs: 20 };
const DELIVER_NORMAL: Admission = { kind: 'deliver', slot: 'normal' };
const DELIVER_PROBE: Admission = { kind: 'deliver', slot: 'probe' };

/** Degrades `target` through `degradeThreshold` failed main-lane deliveries at `nowMs`. */
function degrade(iso: TargetIsolation, target = T, nowMs = 0): void {
  const transitions: Transition[] = [];
  for (let i = 0; i < POLICY.degradeThreshold; i += 1) {
    const admission = iso.admit(target);
    if (admission.kind !== 'deliver') throw new Error(`not admitted: ${admission.kind}`);
    const transition = iso.complete(target, admission.slot, fail, nowMs);
    if (transition) transitions.push(transition);
  }
  expect(transitions).toEqual([{ target, from: 'healthy', to: 'degraded', abnormal: 10, seen: 10 }]);
}

describe('targetOf', () => {
  it.each([
    ['https://hooks.example/a/b?c=d#e', 'https://hooks.example'],
    ['https://hooks.example:443/x', 'https://hooks.example'],
    ['http://hooks.example:80/x', 'http://hooks.example'],
    ['https://hooks.example:8443/x', 'https://hooks.example:8443'],
    ['http://hooks.example:443/x', 'http://hooks.example:443'],
    ['https://hooks.example:80/x', 'https://hooks.example:80'],
    ['HTTPS://Hooks.EXAMPLE/Path', 'https://hooks.example'],
    ['http://127.0.0.1:8080/cb', 'http://127.0.0.1:8080'],
    ['http://[::1]:3000/cb', 'http://[::1]:3000'],
  ])('origin of %s is %s', (url, expected) => {
    expect(targetOf(url, 'origin')).toBe(expected);
  });

  it.each([
    ['https://hooks.example:8443/x', 'hooks.example'],
    ['http://hooks.example/x', 'hooks.example'],
    ['HTTP://Hooks.Example:1/x', 'hooks.example'],
    ['http://[::1]:3000/cb', '[::1]'],
  ])('host of %s is %s', (url, expected) => {
    expect(targetOf(url, 'host')).toBe(expected);
  });

  it('never puts userinfo in the target', () => {
    const url = 'https://user:s3cret@hooks.example:8443/cb';
    expect(targetOf(url, 'origin')).toBe('https://hooks.example:8443');
    expect(targetOf(url, 'host')).toBe('hooks.example');
    expect(targetOf('http://only-user@hooks.example/', 'origin')).toBe('http://hooks.example');
    for (const key of ['origin', 'host'] as const) {
      expect(targetOf(url, key)).not.toContain('s3cret');
      expect(targetOf(url, key)).not.toContain('user');
      expect(targetOf(url, key)).not.toContain('@');
    }
  });

  it('tells ports and schemes apart by origin but not by host', () => {
    const urls = ['http://a.example/', 'https://a.example/', 'https://a.example:8443/', 'https://a.example/other'];
    expect(new Set(urls.map((u) => targetOf(u, 'origin'))).size).toBe(3);
    expect(new Set(urls.map((u) => targetOf(u, 'host'))).size).toBe(1);
  });

  it('throws on something that is not a URL', () => {
    expect(() => targetOf('not a url', 'origin')).toThrow();
  });
});

describe('TargetIsolation.isAbnormal', () => {
  const iso = isolation();
  it.each<[string, DeliveryOutcome]>([
    ['a network error', { error: 'ECONNREFUSED: connect ECONNREFUSED', durationMs: 1 }],
    ['a timeout', { error: 'TIMEOUT: no complete answer within 10000ms', durationMs: 10_000 }],
    ['no response at all', { durationMs: 0 }],
    ['408', { status: 408, durationMs: 5 }],
    ['429', { status: 429, durationMs: 5 }],
    ['500', { status: 500, durationMs: 5 }],
    ['503', { status: 503, durationMs: 5 }],
    ['a slow 200 (exactly the threshold)', { status: 200, durationMs: 3_000 }],
    ['a slow 200', { status: 200, durationMs: 9_999 }],
    ['a slow 404', { status: 404, durationMs: 3_000 }],
  ])('counts %s as abnormal', (_, outcome) => {
    expect(iso.isAbnormal(outcome)).toBe(true);
  });

  it.each<[string, DeliveryOutcome]>([
    ['a fast 200', { status: 200, durationMs: 2_999 }],
    ['a fast 204', { status: 204, durationMs: 0 }],
    ['a fast 404', { status: 404, durationMs: 5 }],
    ['a fast 400', { status: 400, durationMs: 5 }],
    ['a fast 410', { status: 410, durationMs: 5 }],
    ['a fast 301 (not followed)', { status: 301, durationMs: 5 }],
  ])('counts %s as normal', (_, outcome) => {
    expect(iso.isAbnormal(outcome)).toBe(false);
  });

  it('counts a 2xx without the required success body as abnormal, and one with it as normal', () => {
    const strict = isolation({ successBody: 'success' });
    expect(strict.isAbnormal({ status: 200, body: 'nope', durationMs: 5 })).toBe(true);
    expect(strict.isAbnormal({ status: 200, durationMs: 5 })).toBe(true);
    expect(strict.isAbnormal({ status: 200, body: ' success\n', durationMs: 5 })).toBe(false);
    expect(isolation().isAbnormal({ status: 200, body: 'nope', durationMs: 5 })).toBe(false);
  });

  it('exposes the slow threshold', () => {
    expect(isolation({ slowThresholdMs: 1_234 }).slowThresholdMs).toBe(1_234);
  });
});

const WAIT: Admission = { kind: 'wait' };
const DEFER: Admission = { kind: 'defer', why: 'over-cap' };
const DIVERT_DEGRADED: Admission = { kind: 'divert', why: 'degraded' };
const DIVERT_SLOW: Admission = { kind: 'divert', why: 'slow' };

describe('TargetIsolation.admit: bulkhead and waiting room', () => {
  it('delivers to a healthy target up to its cap, then lets the next ones wait', () => {
    const iso = isolation({ perTarget: 2 });
    expect([iso.admit(T), iso.admit(T), iso.admit(T), iso.admit(T)]).toEqual([DELIVER_NORMAL, DELIVER_NORMAL, WAIT, WAIT]);
    expect(iso.admit('https://other.example')).toEqual(DELIVER_NORMAL);
  });

  it('defers (not an attempt) once the target has waitingPerTarget messages waiting', () => {
    const iso = isolation({ perTarget: 1, waitingPerTarget: 2 });
    expect([iso.admit(T), iso.admit(T), iso.admit(T), iso.admit(T)]).toEqual([DELIVER_NORMAL, WAIT, WAIT, DEFER]);
    // Another target has its own waiting room.
    expect(['https://b.example', 'https://b.example'].map((t) => iso.admit(t))).toEqual([DELIVER_NORMAL, WAIT]);
  });

  it('defers once maxWaiting messages wait over all targets', () => {
    const iso = isolation({ perTarget: 1, waitingPerTarget: 5, maxWaiting: 3 });
    const targets = ['https://a.example', 'https://b.example', 'https://c.example', 'https://d.example'];
    for (const t of targets) expect(iso.admit(t)).toEqual(DELIVER_NORMAL);
    expect(targets.map((t) => iso.admit(t))).toEqual([WAIT, WAIT, WAIT, DEFER]);
  });

  it('readmits a waiting message once a delivery of its target completes and frees a slot', () => {
    const iso = isolation({ perTarget: 1 });
    expect([iso.admit(T), iso.admit(T)]).toEqual([DELIVER_NORMAL, WAIT]);
    expect(iso.readmit(T)).toEqual(WAIT); // still no slot: keeps waiting
    iso.complete(T, 'normal', ok, 1);
    expect(iso.readmit(T)).toEqual(DELIVER_NORMAL);
    expect(iso.admit(T)).toEqual(WAIT);
  });

  it('gives the waiting place back on readmit, and only then', () => {
    const iso = isolation({ perTarget: 1, waitingPerTarget: 1, maxWaiting: 1 });
    expect([iso.admit(T), iso.admit(T), iso.admit(T)]).toEqual([DELIVER_NORMAL, WAIT, DEFER]);
    expect(iso.readmit(T)).toEqual(WAIT); // a readmit that still waits keeps its place
    expect(iso.admit('https://b.example')).toEqual(DELIVER_NORMAL);
    expect(iso.admit('https://b.example')).toEqual(DEFER); // the one global place is still taken
    iso.complete(T, 'normal', ok, 1);
    expect(iso.readmit(T)).toEqual(DELIVER_NORMAL);
    expect(iso.admit('https://b.example')).toEqual(WAIT); // the place is free again
  });

  it('leaves slots alone when completing a slow-lane attempt (no slot)', () => {
    const iso = isolation({ perTarget: 1 });
    iso.admit(T);
    iso.complete(T, undefined, ok, 1);
    expect(iso.admit(T)).toEqual(WAIT);
  });
});

describe('TargetIsolation: degraded targets', () => {
  it('gives a degraded target one probe, then diverts as degraded (never waits) until the probe completes', () => {
    const iso = isolation();
    degrade(iso);
    expect(iso.state(T)).toBe('degraded');
    expect(iso.admit(T)).toEqual(DELIVER_PROBE);
    expect(iso.admit(T)).toEqual(DIVERT_DEGRADED);
    expect(iso.admit(T)).toEqual(DIVERT_DEGRADED);
    iso.complete(T, 'probe', fail, 1);
    expect(iso.admit(T)).toEqual(DELIVER_PROBE);
  });

  it('moves the waiting messages of a target that turns degraded on: one probe, the rest diverted', () => {
    const iso = isolation({ perTarget: 10 });
    for (let i = 0; i < 10; i += 1) iso.admit(T);
    expect([iso.admit(T), iso.admit(T), iso.admit(T)]).toEqual([WAIT, WAIT, WAIT]);
    for (let i = 0; i < 10; i += 1) iso.complete(T, 'normal', fail, 0);
    expect(iso.state(T)).toBe('degraded');
    expect([iso.readmit(T), iso.readmit(T), iso.readmit(T)]).toEqual([DELIVER_PROBE, DIVERT_DEGRADED, DIVERT_DEGRADED]);
  });

  it('keeps other targets delivering normally', () => {
    const iso = isolation();
    degrade(iso);
    expect(iso.admit('https://fine.example')).toEqual(DELIVER_NORMAL);
    expect(iso.degradedCount()).toBe(1);
  });

  it('limits probes over all degraded targets to maxProbes', () => {
    const iso = isolation({ maxProbes: 2 });
    const targets = ['https://a.example', 'https://b.example', 'https://c.example'];
    for (const t of targets) degrade(iso, t);
    expect(targets.map((t) => iso.admit(t))).toEqual([DELIVER_PROBE, DELIVER_PROBE, DIVERT_DEGRADED]);
    iso.complete(targets[0] ?? '', 'probe', fail, 1);
    expect(iso.admit(targets[2] ?? '')).toEqual(DELIVER_PROBE);
  });

  it('recovers through fast results after the quiet period, and admits normally again', () => {
    const iso = isolation();
    degrade(iso); // 10 failures at t=0
    const transitions: Transition[] = [];
    for (let i = 0; i < 15; i += 1) {
      // Slow-lane results (no slot) count towards health as well.
      const transition = iso.complete(T, undefined, ok, 30_000);
      if (transition) transitions.push(transition);
    }
    expect(transitions).toEqual([{ target: T, from: 'degraded', to: 'healthy', abnormal: 5, seen: 20 }]);
    expect(iso.state(T)).toBe('healthy');
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
  });

  it('does not recover on fast results before the quiet period', () => {
    const iso = isolation();
    degrade(iso);
    for (let i = 0; i < 40; i += 1) expect(iso.complete(T, undefined, ok, 29_999)).toBeUndefined();
    expect(iso.state(T)).toBe('degraded');
  });

  it('never degrades on fast 404s, however many', () => {
    const iso = isolation();
    for (let i = 0; i < 100; i += 1) {
      expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
      expect(iso.complete(T, 'normal', { status: 404, durationMs: 5 }, i)).toBeUndefined();
    }
    expect(iso.state(T)).toBe('healthy');
  });

  it('degrades on slow successes alone', () => {
    const iso = isolation();
    const transitions = Array.from({ length: 10 }, (_, i) => iso.complete(T, undefined, { status: 200, durationMs: 3_000 }, i)).filter(Boolean);
    expect(transitions).toEqual([{ target: T, from: 'healthy', to: 'degraded', abnormal: 10, seen: 10 }]);
  });
});

describe('TargetIsolation: overdue attempts', () => {
  it('degrades a hanging target after N overdue marks, before any attempt completes', () => {
    const iso = isolation();
    const admissions = Array.from({ length: 10 }, () => iso.admit(T));
    expect(admissions).toEqual(Array.from({ length: 10 }, () => DELIVER_NORMAL));
    for (let i = 1; i <= 9; i += 1) expect(iso.overdue(T, 3_000 + i)).toBeUndefined();
    expect(iso.overdue(T, 3_010)).toEqual({ target: T, from: 'healthy', to: 'degraded', abnormal: 10, seen: 10 });
    expect(iso.state(T)).toBe('degraded');
    // The hanging attempts still hold their slots; the target is degraded: one probe, then divert.
    expect(iso.admit(T)).toEqual(DELIVER_PROBE);
    expect(iso.admit(T)).toEqual(DIVERT_DEGRADED);
  });

  it('diverts a healthy target to the slow lane while one of its attempts is overdue', () => {
    const iso = isolation();
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
    expect(iso.overdue(T, 3_000)).toBeUndefined();
    expect(iso.state(T)).toBe('healthy');
    expect([iso.admit(T), iso.admit(T)]).toEqual([DIVERT_SLOW, DIVERT_SLOW]);
    expect(iso.admit('https://other.example')).toEqual(DELIVER_NORMAL);
    iso.complete(T, 'normal', ok, 4_000, true);
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
  });

  it('keeps diverting until every overdue attempt of the target has completed', () => {
    const iso = isolation();
    iso.admit(T);
    iso.admit(T);
    iso.overdue(T, 3_000);
    iso.overdue(T, 3_001);
    iso.complete(T, 'normal', ok, 4_000, true);
    expect(iso.admit(T)).toEqual(DIVERT_SLOW);
    iso.complete(T, 'normal', ok, 4_001, true);
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
  });

  it('counts overdue slow-lane attempts (no slot) too', () => {
    const iso = isolation();
    iso.overdue(T, 3_000);
    expect(iso.admit(T)).toEqual(DIVERT_SLOW);
    iso.complete(T, undefined, ok, 4_000, true);
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
  });

  it('moves waiting messages of a target with an overdue attempt to the slow lane on readmit', () => {
    const iso = isolation({ perTarget: 1, waitingPerTarget: 1, maxWaiting: 1 });
    expect([iso.admit(T), iso.admit(T)]).toEqual([DELIVER_NORMAL, WAIT]);
    iso.overdue(T, 3_000);
    expect(iso.readmit(T)).toEqual(DIVERT_SLOW);
    expect(iso.admit('https://b.example')).toEqual(DELIVER_NORMAL);
    expect(iso.admit('https://b.example')).toEqual(WAIT); // the waiting place was given back
  });

  it('does not count an overdue attempt twice when it completes (wasOverdue = true)', () => {
    const iso = isolation();
    for (let i = 0; i < 10; i += 1) iso.admit(T);
    for (let i = 0; i < 10; i += 1) iso.overdue(T, 3_000);
    // The hanging attempts finish (as timeouts); each was already recorded as abnormal.
    for (let i = 0; i < 10; i += 1) {
      expect(iso.complete(T, 'normal', { error: 'TIMEOUT: no complete answer within 10000ms', durationMs: 10_000 }, 10_000, true)).toBeUndefined();
    }
    // Window: 10 abnormal of 10. Had the completions counted, it would be 20 of 20 and 15 fast
    // results could not bring it down to 5. Exactly 15 do (10 fill the window, 5 evict).
    const transitions: Transition[] = [];
    for (let i = 0; i < 15; i += 1) {
      const transition = iso.complete(T, undefined, ok, 3_000 + 30_000);
      if (transition) transitions.push(transition);
    }
    expect(transitions).toEqual([{ target: T, from: 'degraded', to: 'healthy', abnormal: 5, seen: 20 }]);
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
  });

  it('still frees the slot of an overdue attempt when it completes', () => {
    const iso = isolation({ perTarget: 1 });
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
    iso.overdue(T, 3_000);
    iso.complete(T, 'normal', ok, 3_500, true);
    expect(iso.admit(T)).toEqual(DELIVER_NORMAL);
    expect(iso.admit(T)).toEqual(WAIT);
  });

  it('counts a completed attempt that was not overdue exactly once (wasOverdue defaults to false)', () => {
    const iso = isolation();
    for (let i = 0; i < 9; i += 1) expect(iso.complete(T, undefined, fail, i)).toBeUndefined();
    expect(iso.complete(T, undefined, fail, 9)?.to).toBe('degraded');
  });

  it('lets overdue marks and completed failures add up towards the threshold', () => {
    const iso = isolation();
    for (let i = 0; i < 5; i += 1) iso.overdue(T, i);
    for (let i = 0; i < 4; i += 1) iso.complete(T, undefined, fail, i);
    expect(iso.state(T)).toBe('healthy');
    expect(iso.overdue(T, 10)?.to).toBe('degraded');
  });

  it('forgets the least recently recorded target past maxTargets', () => {
    const iso = isolation({ maxTargets: 1 });
    degrade(iso);
    iso.complete('https://other.example', undefined, ok, 0);
    expect(iso.state(T)).toBe('healthy');
    expect(iso.degradedCount()).toBe(0);
  });
});
