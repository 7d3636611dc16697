import { describe, it, expect } from 'vitest';
import { Bulkhead, type BulkheadPolicy, type Slot } from '../../../src/policy/bulkhead.js';
import { mulberry32, randomInt } from '../_helpers/prng.js';

const POLICY: BulkheadPolicy = { perTarget: 3, initialPerTarget: 1_000, probesPerTarget: 1, maxProbes: 2, maxTargets: 100 };
const bulkhead = (overrides: Partial<BulkheadPolicy> = {}): Bulkhead => new Bulkhead({ ...POLICY, ...overrides });

/** Acquires `count` times and returns what each call handed out. */
const acquireMany = (b: Bulkhead, target: string, degraded: boolean, count: number): Array<Slot | undefined> =>
  Array.from({ length: count }, () => b.acquire(target, degraded));

describe('Bulkhead: normal slots', () => {
  it('hands out perTarget normal slots to a healthy target, then none', () => {
    const b = bulkhead();
    expect(acquireMany(b, 'a', false, 5)).toEqual(['normal', 'normal', 'normal', undefined, undefined]);
    expect(b.load('a')).toBe(3);
  });

  it('caps each target separately', () => {
    const b = bulkhead();
    acquireMany(b, 'a', false, 3);
    expect(acquireMany(b, 'b', false, 4)).toEqual(['normal', 'normal', 'normal', undefined]);
    expect([b.load('a'), b.load('b'), b.load('c')]).toEqual([3, 3, 0]);
  });

  it('frees a slot on release, so the next acquire succeeds', () => {
    const b = bulkhead();
    acquireMany(b, 'a', false, 3);
    expect(b.acquire('a', false)).toBeUndefined();
    b.release('a', 'normal');
    expect(b.load('a')).toBe(2);
    expect(b.acquire('a', false)).toBe('normal');
    expect(b.acquire('a', false)).toBeUndefined();
  });

  it('drops back to load 0 after every slot is released', () => {
    const b = bulkhead();
    acquireMany(b, 'a', false, 3);
    for (let i = 0; i < 3; i += 1) b.release('a', 'normal');
    expect(b.load('a')).toBe(0);
    expect(acquireMany(b, 'a', false, 4)).toEqual(['normal', 'normal', 'normal', undefined]);
  });

  it('with perTarget 1 lets one delivery through at a time', () => {
    const b = bulkhead({ perTarget: 1 });
    expect(acquireMany(b, 'a', false, 2)).toEqual(['normal', undefined]);
  });
});

describe('Bulkhead: releasing what is not held is harmless', () => {
  it('ignores the release of an unknown target', () => {
    const b = bulkhead();
    expect(() => b.release('nobody', 'normal')).not.toThrow();
    expect(() => b.release('nobody', 'probe')).not.toThrow();
    expect(b.load('nobody')).toBe(0);
    expect(acquireMany(b, 'nobody', false, 4)).toEqual(['normal', 'normal', 'normal', undefined]);
  });

  it('does not let extra releases push a count below zero (the cap still holds afterwards)', () => {
    const b = bulkhead();
    b.acquire('a', false);
    for (let i = 0; i < 5; i += 1) b.release('a', 'normal');
    expect(b.load('a')).toBe(0);
    expect(acquireMany(b, 'a', false, 4)).toEqual(['normal', 'normal', 'normal', undefined]);
  });

  it('does not free a normal slot when a probe is released, nor the other way round', () => {
    const b = bulkhead();
    acquireMany(b, 'a', false, 3);
    b.release('a', 'probe');
    expect(b.load('a')).toBe(3);
    expect(b.acquire('a', false)).toBeUndefined();

    const d = bulkhead();
    d.acquire('x', true);
    d.release('x', 'normal');
    expect(d.load('x')).toBe(1);
    expect(d.acquire('x', true)).toBeUndefined();
  });

  it('does not let a stray probe release raise the global probe allowance', () => {
    const b = bulkhead({ maxProbes: 1 });
    b.release('ghost', 'probe');
    b.acquire('n', false);
    b.release('n', 'probe'); // 'n' holds only a normal slot
    expect(b.acquire('a', true)).toBe('probe');
    expect(b.acquire('b', true)).toBeUndefined();
  });
});

describe('Bulkhead: probes for degraded targets', () => {
  it('gives a degraded target only probe slots, probesPerTarget of them', () => {
    const b = bulkhead();
    expect(acquireMany(b, 'a', true, 3)).toEqual(['probe', undefined, undefined]);
    expect(b.load('a')).toBe(1);
  });

  it('honours a larger probesPerTarget', () => {
    const b = bulkhead({ probesPerTarget: 2, maxProbes: 10 });
    expect(acquireMany(b, 'a', true, 3)).toEqual(['probe', 'probe', undefined]);
  });

  it('frees the probe on release', () => {
    const b = bulkhead();
    b.acquire('a', true);
    b.release('a', 'probe');
    expect(b.load('a')).toBe(0);
    expect(b.acquire('a', true)).toBe('probe');
  });

  it('limits probes over all targets to maxProbes', () => {
    const b = bulkhead({ maxProbes: 2 });
    expect(['a', 'b', 'c', 'd'].map((t) => b.acquire(t, true))).toEqual(['probe', 'probe', undefined, undefined]);
    b.release('a', 'probe');
    expect(b.acquire('c', true)).toBe('probe');
    expect(b.acquire('d', true)).toBeUndefined();
  });

  it('does not count normal slots against maxProbes', () => {
    const b = bulkhead({ maxProbes: 1 });
    for (const t of ['a', 'b', 'c']) acquireMany(b, t, false, 3);
    expect(b.acquire('d', true)).toBe('probe');
  });

  it('grants a probe to a degraded target even while its normal slots from before are in flight', () => {
    const b = bulkhead();
    acquireMany(b, 'a', false, 3);
    expect(b.acquire('a', true)).toBe('probe');
    expect(b.load('a')).toBe(4);
  });

  it('counts an in-flight probe against the normal cap once the target is healthy again', () => {
    const b = bulkhead();
    b.acquire('a', true);
    expect(acquireMany(b, 'a', false, 3)).toEqual(['normal', 'normal', undefined]);
    b.release('a', 'probe');
    expect(b.acquire('a', false)).toBe('normal');
  });
});

describe('Bulkhead.load', () => {
  it('counts normal and probe slots of one target', () => {
    const b = bulkhead({ probesPerTarget: 2, maxProbes: 5 });
    expect(b.load('a')).toBe(0);
    b.acquire('a', false);
    b.acquire('a', true);
    b.acquire('a', true);
    expect(b.load('a')).toBe(3);
    b.release('a', 'probe');
    expect(b.load('a')).toBe(2);
  });

  it('follows a seeded random run of acquires and releases (invariants and exact counts)', () => {
    const policy: BulkheadPolicy = { perTarget: 4, initialPerTarget: 1_000, probesPerTarget: 2, maxProbes: 3, maxTargets: 100 };
    const b = new Bulkhead(policy);
    const random = mulberry32(7);
    const targets = ['a', 'b', 'c', 'd', 'e'];
    const held = new Map<string, Slot[]>(targets.map((t) => [t, []]));
    const degraded = new Set<string>();
    for (let step = 0; step < 5_000; step += 1) {
      const target = targets[randomInt(random, 0, targets.length - 1)] ?? 'a';
      const slots = held.get(target) ?? [];
      const roll = random();
      if (roll < 0.1) {
        if (degraded.has(target)) degraded.delete(target);
        else degraded.add(target);
      } else if (roll < 0.55 && slots.length > 0) {
        const [slot] = slots.splice(randomInt(random, 0, slots.length - 1), 1);
        if (slot) b.release(target, slot);
      } else {
        const probes = [...held.values()].flat().filter((s) => s === 'probe').length;
        const mine = slots.filter((s) => s === 'probe').length;
        const expected: Slot | undefined = degraded.has(target)
          ? mine < policy.probesPerTarget && probes < policy.maxProbes ? 'probe' : undefined
          : slots.length < policy.perTarget ? 'normal' : undefined;
        const slot = b.acquire(target, degraded.has(target));
        expect(slot).toBe(expected);
        if (slot) slots.push(slot);
      }
      expect(b.load(target)).toBe(slots.length);
      expect([...held.values()].flat().filter((s) => s === 'probe').length).toBeLessThanOrEqual(policy.maxProbes);
    }
  });
});

describe('Bulkhead slow start', () => {
  const slowStart = (): Bulkhead => new Bulkhead({ perTarget: 8, initialPerTarget: 2, probesPerTarget: 1, maxProbes: 2, maxTargets: 100 });

  it('starts a target at initialPerTarget, so a target hanging from its first request holds only that many slots', () => {
    const b = slowStart();
    expect(b.acquire('t', false)).toBe('normal');
    expect(b.acquire('t', false)).toBe('normal');
    expect(b.acquire('t', false)).toBeUndefined();
    expect(b.limit('t')).toBe(2);
  });

  it('adds one slot per fast result, up to perTarget', () => {
    const b = slowStart();
    b.acquire('t', false);
    for (let i = 0; i < 20; i += 1) {
      b.acquire('t', false);
      b.release('t', 'normal');
    }
    expect(b.limit('t')).toBe(8);
  });

  it('halves the limit on an abnormal result, never below the start', () => {
    const b = slowStart();
    b.acquire('t', false);
    for (let i = 0; i < 10; i += 1) {
      b.acquire('t', false);
      b.release('t', 'normal');
    }
    expect(b.limit('t')).toBe(8);
    b.acquire('t', false);
    b.release('t', 'normal', true);
    expect(b.limit('t')).toBe(4);
    b.acquire('t', false);
    b.release('t', 'normal', true);
    b.acquire('t', false);
    b.release('t', 'normal', true);
    expect(b.limit('t')).toBe(2);
  });

  it('remembers the earned limit of an idle target, so a bursty target does not start over', () => {
    const b = slowStart();
    for (let i = 0; i < 5; i += 1) {
      b.acquire('t', false);
      b.release('t', 'normal');
    }
    expect(b.load('t')).toBe(0);
    expect(b.limit('t')).toBe(7);
  });

  it('forgets the least recently used limits past maxTargets', () => {
    const b = new Bulkhead({ perTarget: 8, initialPerTarget: 2, probesPerTarget: 1, maxProbes: 2, maxTargets: 2 });
    for (const t of ['a', 'b', 'c']) {
      b.acquire(t, false);
      b.release(t, 'normal');
    }
    expect([b.limit('a'), b.limit('b'), b.limit('c')]).toEqual([2, 3, 3]);
  });
});
