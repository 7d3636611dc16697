import { describe, it, expect } from 'vitest';
import {
  EndpointHealth,
  MAX_TRACKED_ATTEMPT,
  type HealthPolicy,
  type HealthState,
  type Transition,
} from '../../../src/isolation/health.js';
import { mulberry32, randomInt } from '../../support/prng.js';

/** Seed 002 defaults: 10 abnormal of the last 20 degrade; back at ≤ 5 after a 30s quiet period. */
const SEED_002: HealthPolicy = { window: 20, degradeThreshold: 10, recoverThreshold: 5, quietPeriodMs: 30_000, maxTargets: 10_000 };
const QUIET = SEED_002.quietPeriodMs;
const T = 'https://hooks.example';

const health = (overrides: Partial<HealthPolicy> = {}): EndpointHealth => new EndpointHealth({ ...SEED_002, ...overrides });

/** Records `count` results of one kind at `nowMs`; returns every transition they caused. */
function feed(h: EndpointHealth, target: string, abnormal: boolean, count: number, nowMs: number): Transition[] {
  const transitions: Transition[] = [];
  for (let i = 0; i < count; i += 1) {
    const transition = h.record(target, abnormal, nowMs);
    if (transition) transitions.push(transition);
  }
  return transitions;
}

/** A target degraded by `degradeThreshold` abnormal results at `nowMs` (10 of 10 seen by default). */
function degraded(overrides: Partial<HealthPolicy> = {}, nowMs = 0): EndpointHealth {
  const h = health(overrides);
  feed(h, T, true, { ...SEED_002, ...overrides }.degradeThreshold, nowMs);
  expect(h.state(T)).toBe('degraded');
  return h;
}

describe('EndpointHealth: degrading (seed 002 defaults)', () => {
  it('reports an unknown target as healthy', () => {
    const h = health();
    expect(h.state('never-seen')).toBe('healthy');
    expect(h.degradedCount()).toBe(0);
  });

  it('stays healthy through 9 abnormal results and degrades on the 10th, with exactly one transition', () => {
    const h = health();
    for (let i = 1; i <= 9; i += 1) {
      expect(h.record(T, true, i)).toBeUndefined();
      expect(h.state(T)).toBe('healthy');
    }
    expect(h.record(T, true, 10)).toEqual({ target: T, from: 'healthy', to: 'degraded', abnormal: 10, seen: 10 });
    expect(h.state(T)).toBe('degraded');
    expect(h.degradedCount()).toBe(1);
  });

  it('returns no further transition while the target stays degraded', () => {
    const h = degraded();
    expect(feed(h, T, true, 30, 1)).toEqual([]);
    expect(feed(h, T, false, 3, 2)).toEqual([]);
    expect(feed(h, T, true, 5, 3)).toEqual([]);
    expect(h.state(T)).toBe('degraded');
    expect(h.degradedCount()).toBe(1);
  });

  it('ignores normal results: 1000 of them never degrade', () => {
    const h = health();
    expect(feed(h, T, false, 1_000, 0)).toEqual([]);
    expect(h.state(T)).toBe('healthy');
  });

  it('counts interleaved results: alternating normal/abnormal degrades on the 20th result (10 of 20)', () => {
    const h = health();
    const transitions: Array<[number, Transition]> = [];
    for (let i = 1; i <= 20; i += 1) {
      const transition = h.record(T, i % 2 === 0, i);
      if (transition) transitions.push([i, transition]);
    }
    expect(transitions).toEqual([[20, { target: T, from: 'healthy', to: 'degraded', abnormal: 10, seen: 20 }]]);
  });

  it('stays healthy forever at 9 abnormal in every 20 (the window slides, old entries fall out)', () => {
    const h = health();
    // Pattern of 20: nine abnormal then eleven normal, repeated: any 20 consecutive results hold exactly 9.
    for (let i = 0; i < 400; i += 1) expect(h.record(T, i % 20 < 9, i)).toBeUndefined();
    expect(h.state(T)).toBe('healthy');
  });

  it('evicts the oldest entry once the ring buffer is full', () => {
    const h = health();
    feed(h, T, true, 9, 0); // window: A×9
    feed(h, T, false, 11, 0); // window: A×9 N×11 (full, 9 abnormal)
    // Each of the next 9 abnormal results pushes out one of the 9 old abnormal ones: the count stays 9.
    for (let i = 0; i < 9; i += 1) expect(h.record(T, true, 1)).toBeUndefined();
    // The 10th pushes out the oldest normal one: 10 abnormal of 20.
    expect(h.record(T, true, 1)).toEqual({ target: T, from: 'healthy', to: 'degraded', abnormal: 10, seen: 20 });
  });

  it('evicts abnormal entries so that a later burst must refill the window', () => {
    const h = health();
    feed(h, T, true, 9, 0);
    feed(h, T, false, 20, 0); // the 9 abnormal are gone
    for (let i = 0; i < 9; i += 1) expect(h.record(T, true, 1)).toBeUndefined();
    expect(h.record(T, true, 1)?.abnormal).toBe(10);
  });

  it('keeps targets apart', () => {
    const h = degraded();
    feed(h, 'other', true, 9, 0);
    expect(h.state('other')).toBe('healthy');
    expect(h.state(T)).toBe('degraded');
    expect(h.record('other', true, 0)?.target).toBe('other');
    expect(h.degradedCount()).toBe(2);
  });

  it('honours a custom window and threshold (3 of 5)', () => {
    const h = health({ window: 5, degradeThreshold: 3, recoverThreshold: 1 });
    expect(h.record(T, true, 0)).toBeUndefined();
    expect(feed(h, T, false, 4, 0)).toEqual([]); // A N N N N
    expect(h.record(T, true, 0)).toBeUndefined(); // N N N N A (first A evicted): 1
    expect(h.record(T, true, 0)).toBeUndefined(); // 2
    expect(h.record(T, true, 0)).toEqual({ target: T, from: 'healthy', to: 'degraded', abnormal: 3, seen: 5 });
  });
});

describe('EndpointHealth: failedThroughout (whether a callback whose schedule ran out may be dead-lettered)', () => {
  /** No attempt number asked about: the target's failures alone decide (the per-attempt rule is tested below). */
  const NO_ATTEMPT = { from: 1, to: 0 };

  it('holds while degraded, with no success since the time asked and a failure at or after the other', () => {
    const h = degraded({}, 1_000);
    expect(h.failedThroughout(T, 0, 1_000, NO_ATTEMPT)).toBe(true);
    expect(h.failedThroughout(T, 0, 1_001, NO_ATTEMPT)).toBe(false);
    // A fast failure counts too: a receiver that refuses fails whatever the callback.
    h.record(T, false, 5_000);
    expect(h.failedThroughout(T, 0, 5_000, NO_ATTEMPT)).toBe(true);
    expect(h.failedThroughout('https://other.example', 0, 0, NO_ATTEMPT)).toBe(false);
  });

  it('does not hold once a request succeeded since, even if the circuit opened again, nor for a healthy target', () => {
    const h = degraded({}, 1_000);
    h.record(T, false, 2_000, true);
    expect(h.state(T)).toBe('healthy');
    expect(h.failedThroughout(T, 0, 0, NO_ATTEMPT)).toBe(false);
    feed(h, T, true, 10, 3_000);
    expect(h.state(T)).toBe('degraded');
    expect(h.failedThroughout(T, 1_500, 3_000, NO_ATTEMPT)).toBe(false);
    expect(h.failedThroughout(T, 2_500, 3_000, NO_ATTEMPT)).toBe(true);
    // Another worker's word opens the circuit, but only this worker's own failures count as failing.
    const shared = health();
    shared.force(T, 'degraded', 3_000);
    expect(shared.failedThroughout(T, 0, 0, NO_ATTEMPT)).toBe(false);
    shared.record(T, true, 4_000);
    expect(shared.failedThroughout(T, 0, 4_000, NO_ATTEMPT)).toBe(true);
    // Closed by another worker: the target answered there.
    shared.force(T, 'healthy', 5_000);
    feed(shared, T, true, 10, 6_000);
    expect(shared.failedThroughout(T, 4_500, 6_000, NO_ATTEMPT)).toBe(false);
    expect(shared.failedThroughout(T, 5_500, 6_000, NO_ATTEMPT)).toBe(true);
  });

  it('knows nothing of what came before the worker started watching, or before it last forgot a target', () => {
    const h = new EndpointHealth({ ...SEED_002, maxTargets: 2 }, 10_000);
    feed(h, T, true, 10, 12_000);
    expect(h.failedThroughout(T, 9_000, 12_000, NO_ATTEMPT)).toBe(false);
    expect(h.failedThroughout(T, 10_000, 12_000, NO_ATTEMPT)).toBe(true);
    h.record('https://b.example', false, 13_000, true);
    h.record('https://c.example', false, 14_000, true);
    expect(h.failedThroughout(T, 10_000, 12_000, NO_ATTEMPT)).toBe(false);
    expect(h.failedThroughout(T, 14_000, 12_000, NO_ATTEMPT)).toBe(true);
  });

  it('asks the latest answer at every attempt number the callback has left: a target whose first attempts hang and whose second ones succeed is not failing at 2', () => {
    const h = health();
    // Attempt 2 succeeded once, then attempt-1 requests hang and open the circuit.
    h.record(T, false, 500, true, 2);
    feed(h, T, true, 10, 1_000);
    for (let i = 0; i < 10; i += 1) h.record(T, true, 1_000, false, 1);
    expect(h.state(T)).toBe('degraded');
    expect(h.failedThroughout(T, 600, 1_000, { from: 1, to: 1 })).toBe(true);
    expect(h.failedThroughout(T, 600, 1_000, { from: 1, to: 3 })).toBe(false);
    expect(h.failedThroughout(T, 600, 1_000, { from: 2, to: 3 })).toBe(false);
    // Attempts 2 and 3 fail later: every attempt left has failed at its latest request.
    h.record(T, true, 2_000, false, 2);
    expect(h.failedThroughout(T, 600, 2_000, { from: 1, to: 3 })).toBe(false);
    h.record(T, true, 3_000, false, 3);
    expect(h.failedThroughout(T, 600, 3_000, { from: 1, to: 3 })).toBe(true);
    expect(h.failedThroughout(T, 600, 3_000, { from: 3, to: 3 })).toBe(true);
    expect(h.heardAt(T, 3)).toBe(true);
    expect(h.heardAt(T, 4)).toBe(false);
    expect(h.heardAt('https://other.example', 1)).toBe(false);
    expect(h.heardAt(T, MAX_TRACKED_ATTEMPT + 1)).toBe(true);
    // More attempts left than are tracked: never judged.
    expect(h.failedThroughout(T, 0, 0, { from: 1, to: MAX_TRACKED_ATTEMPT + 1 })).toBe(false);
  });
});

describe('EndpointHealth: recovering', () => {
  it('does not recover before the quiet period even when fast results push the count down', () => {
    const h = degraded(); // 10 abnormal at t=0
    expect(feed(h, T, false, 10, 1_000)).toEqual([]); // window full: 10 of 20
    expect(feed(h, T, false, 10, QUIET - 1)).toEqual([]); // 0 abnormal left, but only 29.999s quiet
    expect(h.state(T)).toBe('degraded');
    expect(h.record(T, false, QUIET)).toEqual({ target: T, from: 'degraded', to: 'healthy', abnormal: 0, seen: 20 });
    expect(h.state(T)).toBe('healthy');
    expect(h.degradedCount()).toBe(0);
  });

  it('does not recover after the quiet period while the count is above recoverThreshold (≤ 5 is needed)', () => {
    const h = degraded();
    const later = 10 * QUIET;
    expect(feed(h, T, false, 10, later)).toEqual([]); // 10 of 20: nothing evicted yet
    for (let count = 9; count >= 6; count -= 1) expect(h.record(T, false, later)).toBeUndefined(); // 9, 8, 7, 6 abnormal
    expect(h.state(T)).toBe('degraded');
    expect(h.record(T, false, later)).toEqual({ target: T, from: 'degraded', to: 'healthy', abnormal: 5, seen: 20 });
  });

  it('measures the quiet period from the last abnormal result, not the first', () => {
    const h = degraded();
    feed(h, T, false, 10, 1);
    h.record(T, true, 50_000); // evicts an old abnormal one; count stays 10; last abnormal now at 50s
    expect(feed(h, T, false, 10, 50_000 + QUIET - 1)).toEqual([]); // count down to 1, but 1ms short of quiet
    expect(h.record(T, false, 50_000 + QUIET)?.to).toBe('healthy');
  });

  it('recovers exactly at lastAbnormalAt + quietPeriodMs', () => {
    const h = degraded({ window: 4, degradeThreshold: 2, recoverThreshold: 0, quietPeriodMs: 100 }, 7);
    feed(h, T, false, 3, 8); // A A N N → A N N N (count 1)
    expect(h.record(T, false, 106)).toBeUndefined(); // N N N N, 99ms quiet
    expect(h.record(T, false, 107)).toEqual({ target: T, from: 'degraded', to: 'healthy', abnormal: 0, seen: 4 });
  });

  it('checks recovery only when a result is recorded (time alone changes nothing)', () => {
    const h = degraded();
    feed(h, T, false, 20, 1);
    expect(h.state(T)).toBe('degraded');
    expect(h.record(T, false, 10 * QUIET)?.to).toBe('healthy');
  });

  it('never lets an abnormal result itself recover the target while the quiet period is > 0', () => {
    const h = degraded({ recoverThreshold: 9 });
    feed(h, T, false, 20, 1); // 0 abnormal left
    expect(h.record(T, true, 10 * QUIET)).toBeUndefined(); // 1 abnormal, but it just happened
    expect(h.state(T)).toBe('degraded');
    expect(h.record(T, false, 11 * QUIET)?.to).toBe('healthy');
  });

  /** Results 1s apart after degrading at t=0; one abnormal every 4 to 6 results (≤ 5 in any 20). */
  function flap(h: EndpointHealth, rounds: number): { transitions: Transition[]; now: number } {
    const random = mulberry32(2);
    const transitions: Transition[] = [];
    let now = 0;
    for (let round = 0; round < rounds; round += 1) {
      const gap = randomInt(random, 4, 6);
      for (let i = 1; i <= gap; i += 1) {
        const transition = h.record(T, i === gap, (now += 1_000));
        if (transition) transitions.push(transition);
      }
    }
    return { transitions, now };
  }

  it('keeps a flapping target (abnormal every few results) degraded', () => {
    const h = degraded();
    const { transitions, now } = flap(h, 300);
    // The count is low enough, but an abnormal result is never 30s old: no transition at all.
    expect(transitions).toEqual([]);
    expect(h.state(T)).toBe('degraded');
    // Once it stops flapping, the quiet period passes and it recovers: exactly one transition.
    const after = feed(h, T, false, 30, now + QUIET);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ target: T, from: 'degraded', to: 'healthy', seen: 20 });
  });

  it('would let the same flapping target back without a quiet period (the quiet period is what holds it)', () => {
    const h = degraded({ quietPeriodMs: 0 });
    expect(flap(h, 300).transitions.length).toBeGreaterThan(0);
  });

  it('can degrade again after recovering, reporting each transition once', () => {
    const h = degraded();
    const log: Array<[HealthState, HealthState]> = [];
    const note = (t: Transition | undefined): void => void (t && log.push([t.from, t.to]));
    let now = 0;
    for (let cycle = 0; cycle < 3; cycle += 1) {
      for (let i = 0; i < 20; i += 1) note(h.record(T, false, (now += QUIET)));
      for (let i = 0; i < 20; i += 1) note(h.record(T, true, (now += 1)));
    }
    expect(log).toEqual([
      ['degraded', 'healthy'],
      ['healthy', 'degraded'],
      ['degraded', 'healthy'],
      ['healthy', 'degraded'],
      ['degraded', 'healthy'],
      ['healthy', 'degraded'],
    ]);
  });

  it('with a quiet period of 0 recovers on the first result that brings the count down', () => {
    const h = degraded({ quietPeriodMs: 0 });
    expect(feed(h, T, false, 14, 0)).toEqual([]); // 10 → 6
    expect(h.record(T, false, 0)).toEqual({ target: T, from: 'degraded', to: 'healthy', abnormal: 5, seen: 20 });
  });
});

describe('EndpointHealth: memory bound (LRU by recording)', () => {
  it('forgets the least recently recorded target when a new one arrives past maxTargets and every one is degraded', () => {
    const h = health({ maxTargets: 3, degradeThreshold: 1, recoverThreshold: 0 });
    h.record('a', true, 0);
    h.record('b', true, 0);
    h.record('c', true, 0);
    expect(h.degradedCount()).toBe(3);
    h.record('d', false, 0);
    expect(h.state('a')).toBe('healthy'); // forgotten
    expect(['b', 'c'].map((t) => h.state(t))).toEqual(['degraded', 'degraded']);
    expect(h.degradedCount()).toBe(2);
  });

  it('forgets healthy targets first: many distinct origins never close an open circuit', () => {
    const h = health({ maxTargets: 3, degradeThreshold: 1, recoverThreshold: 0 });
    h.record('failing', true, 0);
    for (let i = 0; i < 100; i += 1) h.record(`https://spray-${i}.example`, false, i);
    expect(h.state('failing')).toBe('degraded');
    expect(h.degradedCount()).toBe(1);
    expect(h.state('https://spray-99.example')).toBe('healthy');
  });

  it('refreshes a target on every record, so the next one out is the least recently recorded', () => {
    const h = health({ maxTargets: 3, degradeThreshold: 1, recoverThreshold: 0 });
    for (const t of ['a', 'b', 'c']) h.record(t, true, 0);
    h.record('a', true, 1); // a is now the most recent
    h.record('d', true, 2); // every one is degraded: b goes
    expect(['a', 'b', 'c'].map((t) => h.state(t))).toEqual(['degraded', 'healthy', 'degraded']);
    h.record('e', true, 3); // c goes
    expect(h.state('c')).toBe('healthy');
    expect(h.state('a')).toBe('degraded');
  });

  it('does not count state() reads as use', () => {
    const h = health({ maxTargets: 2, degradeThreshold: 1, recoverThreshold: 0 });
    h.record('a', true, 0);
    h.record('b', true, 0);
    expect(h.state('a')).toBe('degraded');
    h.record('c', true, 0);
    expect(h.state('a')).toBe('healthy');
    expect(h.state('b')).toBe('degraded');
  });

  it('does not evict when an already known target records at the bound', () => {
    const h = health({ maxTargets: 2, degradeThreshold: 1, recoverThreshold: 0 });
    h.record('a', true, 0);
    h.record('b', true, 0);
    for (let i = 0; i < 10; i += 1) h.record(i % 2 ? 'a' : 'b', true, i);
    expect(h.degradedCount()).toBe(2);
  });

  it('starts a forgotten target from an empty window', () => {
    const h = health({ maxTargets: 1 });
    feed(h, T, true, 9, 0);
    h.record('other', false, 0); // T forgotten with its 9 abnormal results
    h.record(T, true, 0); // T forgotten again ('other' was the one remembered): fresh window
    expect(feed(h, T, true, 8, 0)).toEqual([]); // 9 of 9
    expect(h.record(T, true, 0)).toEqual({ target: T, from: 'healthy', to: 'degraded', abnormal: 10, seen: 10 });
  });

  it('never remembers more than maxTargets targets', () => {
    const h = health({ maxTargets: 50, degradeThreshold: 1, recoverThreshold: 0 });
    for (let i = 0; i < 5_000; i += 1) h.record(`https://t${i}.example`, true, i);
    expect(h.degradedCount()).toBe(50);
    expect(h.state('https://t4950.example')).toBe('degraded');
    expect(h.state('https://t4949.example')).toBe('healthy');
  });
});

describe('EndpointHealth against a reference model (seeded)', () => {
  /** The rules of the spec, written naively: keep the whole history, recount the window every time. */
  class Model {
    private readonly history = new Map<string, { results: boolean[]; state: HealthState; lastAbnormalAt: number }>();
    constructor(private readonly policy: HealthPolicy) {}
    record(target: string, abnormal: boolean, nowMs: number): Transition | undefined {
      const entry = this.history.get(target) ?? { results: [], state: 'healthy' as HealthState, lastAbnormalAt: -Infinity };
      this.history.set(target, entry);
      entry.results.push(abnormal);
      if (abnormal) entry.lastAbnormalAt = nowMs;
      const windowed = entry.results.slice(-this.policy.window);
      const count = windowed.filter(Boolean).length;
      const from = entry.state;
      if (from === 'healthy' && count >= this.policy.degradeThreshold) entry.state = 'degraded';
      if (from === 'degraded' && count <= this.policy.recoverThreshold && nowMs - entry.lastAbnormalAt >= this.policy.quietPeriodMs)
        entry.state = 'healthy';
      return entry.state === from ? undefined : { target, from, to: entry.state, abnormal: count, seen: windowed.length };
    }
  }

  it.each([1, 2, 3, 42, 2024])('agrees on every transition (seed %i)', (seed) => {
    const random = mulberry32(seed);
    const window = randomInt(random, 1, 25);
    const degradeThreshold = randomInt(random, 1, window);
    const policy: HealthPolicy = {
      window,
      degradeThreshold,
      recoverThreshold: randomInt(random, 0, degradeThreshold - 1),
      quietPeriodMs: randomInt(random, 0, 50),
      maxTargets: 100,
    };
    const real = new EndpointHealth(policy);
    const model = new Model(policy);
    const targets = ['a', 'b', 'c'];
    let now = 0;
    let transitions = 0;
    for (let step = 0; step < 3_000; step += 1) {
      const target = targets[randomInt(random, 0, targets.length - 1)] ?? 'a';
      const abnormal = random() < 0.45;
      now += randomInt(random, 0, 10);
      const expected = model.record(target, abnormal, now);
      expect(real.record(target, abnormal, now)).toEqual(expected);
      if (expected) transitions += 1;
    }
    expect(transitions).toBeGreaterThan(0);
  });
});
