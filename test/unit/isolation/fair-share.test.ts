import { describe, it, expect } from 'vitest';
import { FairShare, type FairSharePolicy } from '../../../src/isolation/fair-share.js';

const policy = (overrides: Partial<FairSharePolicy> = {}): FairSharePolicy => ({
  capacity: 10,
  perTarget: 10,
  initialPerTarget: 2,
  maxTargets: 100,
  ...overrides,
});

/** Starts everything that may start now; returns the targets in start order. */
function startAll<T>(share: FairShare<T>): string[] {
  const started: string[] = [];
  for (let next = share.next(); next; next = share.next()) started.push(next.target);
  return started;
}

describe('FairShare', () => {
  it('keeps a target that has shown only slowness at its limit while a proven-fast one has work', () => {
    const share = new FairShare<number>(policy({ capacity: 6 }));
    for (let round = 0; round < 3; round += 1) {
      share.push('fast', round);
      share.next();
      share.done('fast', 'fast');
    }
    expect(share.limit('fast')).toBe(5);
    for (let i = 0; i < 20; i += 1) share.push('hangs', i);
    for (let i = 0; i < 20; i += 1) share.push('fast', i);
    const first = startAll(share);
    expect(first.filter((t) => t === 'hangs')).toHaveLength(2);
    expect(first.filter((t) => t === 'fast')).toHaveLength(4);
    share.done('hangs', 'slow');
    expect(startAll(share)).toEqual(['hangs']);
    share.done('fast', 'fast');
    expect(startAll(share)).toEqual(['fast']);
  });

  it('grows a limit by one per fast result', () => {
    const share = new FairShare<number>(policy());
    share.push('t', 1);
    share.next();
    share.done('t', 'fast');
    expect(share.limit('t')).toBe(3);
  });

  it('lends idle slots to a target at its limit once it has earned one fast result (work-conserving)', () => {
    const share = new FairShare<number>(policy({ capacity: 10, initialPerTarget: 2 }));
    for (let i = 0; i < 20; i += 1) share.push('t', i);
    expect(startAll(share)).toHaveLength(2);
    share.done('t', 'fast');
    expect(startAll(share)).toHaveLength(9);
  });

  it('lends nothing to a target whose results were only slow, or that has none yet', () => {
    const share = new FairShare<number>(policy({ capacity: 10, initialPerTarget: 2 }));
    for (let i = 0; i < 20; i += 1) share.push('hangs', i);
    expect(startAll(share)).toHaveLength(2);
    share.done('hangs', 'slow');
    expect(startAll(share)).toHaveLength(1);
  });

  it('lets a target alone use every slot once it has proven fast (work-conserving)', () => {
    const share = new FairShare<number>(policy());
    for (let i = 0; i < 1_000; i += 1) share.push('t', i);
    for (let round = 0; round < 20; round += 1) {
      startAll(share);
      while (share.inFlight('t') > 0) share.done('t', 'fast');
    }
    startAll(share);
    expect(share.inFlight()).toBe(10);
  });

  it('gives each freed slot to the target with fewest in flight, whatever the backlogs', () => {
    const share = new FairShare<number>(policy({ initialPerTarget: 10 }));
    for (let i = 0; i < 1_000; i += 1) share.push('busy', i);
    expect(startAll(share)).toHaveLength(10);
    for (let i = 0; i < 5; i += 1) share.push('cold', i);
    share.done('busy', 'fast');
    share.done('busy', 'fast');
    expect(startAll(share)).toEqual(['cold', 'cold']);
    share.done('busy', 'fast');
    expect(startAll(share)).toEqual(['cold']);
    share.done('cold', 'fast');
    share.done('cold', 'fast');
    share.done('cold', 'fast');
    expect(startAll(share)).toEqual(['cold', 'cold', 'busy']);
  });

  it('shares evenly between targets that all have work (ties in arrival order)', () => {
    const share = new FairShare<number>(policy({ capacity: 6, initialPerTarget: 6 }));
    for (const target of ['a', 'b', 'c']) for (let i = 0; i < 10; i += 1) share.push(target, i);
    expect(startAll(share)).toEqual(['a', 'b', 'c', 'a', 'b', 'c']);
  });

  it('halves the limit on a slow result, never below the initial one', () => {
    const share = new FairShare<number>(policy({ initialPerTarget: 2 }));
    for (let i = 0; i < 1_000; i += 1) share.push('t', i);
    for (let round = 0; round < 10; round += 1) {
      startAll(share);
      while (share.inFlight('t') > 0) share.done('t', 'fast');
    }
    expect(share.limit('t')).toBe(10);
    startAll(share);
    share.done('t', 'slow');
    expect(share.limit('t')).toBe(5);
    share.done('t', 'slow');
    share.done('t', 'slow');
    share.done('t', 'slow');
    expect(share.limit('t')).toBe(2);
    share.done('t', 'none');
    expect(share.limit('t')).toBe(2);
  });

  it('holds a hard per-target cap when one is set', () => {
    const share = new FairShare<number>(policy({ perTarget: 3, initialPerTarget: 10 }));
    for (let i = 0; i < 10; i += 1) share.push('t', i);
    expect(startAll(share)).toHaveLength(3);
  });

  it('hands out items in FIFO order per target', () => {
    const share = new FairShare<number>(policy({ initialPerTarget: 10 }));
    for (let i = 0; i < 5; i += 1) share.push('t', i);
    const items: number[] = [];
    for (let next = share.next(); next; next = share.next()) items.push(next.item);
    expect(items).toEqual([0, 1, 2, 3, 4]);
  });

  it("takes a target's waiting items out, and drops matching ones", () => {
    const share = new FairShare<number>(policy({ capacity: 2, initialPerTarget: 1 }));
    for (let i = 0; i < 5; i += 1) share.push('a', i);
    for (let i = 10; i < 15; i += 1) share.push('b', i);
    startAll(share);
    expect(share.takeWaiting('a')).toEqual([1, 2, 3, 4]);
    expect(share.waiting('a')).toBe(0);
    expect(share.drop((item) => item % 2 === 0).map((d) => d.item)).toEqual([12, 14]);
    expect(share.waiting()).toBe(2);
    share.done('b', 'none');
    const left: number[] = [];
    for (let next = share.next(); next; next = share.next()) left.push(next.item);
    expect(left).toEqual([11]);
  });

  it('forgets earned limits beyond maxTargets, least recently used first', () => {
    const share = new FairShare<number>(policy({ maxTargets: 2 }));
    for (const target of ['a', 'b', 'c']) {
      share.push(target, 0);
      share.next();
      share.done(target, 'fast');
    }
    expect([share.limit('a'), share.limit('b'), share.limit('c')]).toEqual([2, 3, 3]);
  });

  it('keeps no reference to items it has handed out, however long a target stays busy', () => {
    const share = new FairShare<{ n: number }>(policy({ capacity: 1, initialPerTarget: 1 }));
    for (let n = 0; n < 100; n += 1) share.push('t', { n });
    for (let n = 0; n < 20_000; n += 1) {
      share.push('t', { n });
      share.next();
      share.done('t', 'fast');
    }
    // 100 still wait; the 20,000 handed out must not be held.
    const queue = (share as unknown as { targets: Map<string, { waiting: unknown[] }> }).targets.get('t');
    expect(share.waiting('t')).toBe(100);
    expect(queue!.waiting.length).toBeLessThan(1_300);
  });

  it('takes what a target earned the moment one of its attempts turns slow, so it borrows no more', () => {
    const share = new FairShare<number>(policy({ capacity: 10, initialPerTarget: 2 }));
    for (let i = 0; i < 50; i += 1) share.push('t', i);
    startAll(share);
    share.done('t', 'fast');
    expect(startAll(share).length).toBeGreaterThan(0);
    expect(share.inFlight('t')).toBe(10);
    share.slowed('t');
    expect(share.limit('t')).toBe(2);
    share.done('t', 'none');
    expect(startAll(share)).toEqual([]);
  });

  it('files a target again when its earned limit is forgotten (more than maxTargets earned)', () => {
    const share = new FairShare<number>(policy({ capacity: 10, initialPerTarget: 1, maxTargets: 1 }));
    share.push('a', 0);
    share.next();
    share.done('a', 'fast');
    for (let i = 0; i < 5; i += 1) share.push('a', i);
    expect(startAll(share)).toHaveLength(5);
    share.push('b', 0);
    share.next();
    share.done('b', 'fast'); // forgets a's limit: a may no longer borrow
    for (let i = 0; i < 5; i += 1) share.done('a', 'none');
    for (let i = 0; i < 5; i += 1) share.push('a', i);
    expect(startAll(share)).toHaveLength(1);
  });
});

describe('FairShare: a target that works, slowly', () => {
  it('may borrow idle slots after a slow success, where a slow failure keeps it at its initial limit', () => {
    for (const [result, started] of [
      ['slow-success', 10],
      ['slow', 2],
    ] as const) {
      const share = new FairShare<number>(policy());
      for (let i = 0; i < 30; i += 1) share.push('s', i);
      share.next();
      share.next();
      expect(share.next()).toBeUndefined();
      share.done('s', result);
      let running = 1;
      while (share.next()) running += 1;
      expect(running, result).toBe(started);
    }
  });
});

describe('FairShare: kept slots', () => {
  it('lets the targets of keep hold up to half the slots between them ahead of max-min order, fewest in flight first', () => {
    const share = new FairShare<number>(policy({ capacity: 10, initialPerTarget: 10 }));
    for (let i = 0; i < 100; i += 1) share.push('backlog', i);
    expect(startAll(share)).toHaveLength(10);
    for (let q = 0; q < 20; q += 1) share.push(`new-${q}`, q);
    // Max-min: every freed slot goes to a new target (none in flight) before the backlog's next.
    for (let i = 0; i < 6; i += 1) share.done('backlog', 'fast');
    expect(startAll(share)).toEqual(['new-0', 'new-1', 'new-2', 'new-3', 'new-4', 'new-5']);
    expect(share.inFlight('backlog')).toBe(4);
    // Kept, it takes freed slots until it holds half of them; the rest go max-min again.
    share.keep(new Set(['backlog']));
    for (let q = 0; q < 3; q += 1) share.done(`new-${q}`, 'fast');
    expect(startAll(share)).toEqual(['backlog', 'new-6', 'new-7']);
    expect(share.inFlight('backlog')).toBe(5);
    // Two kept targets share the half: the one with fewer in flight first.
    for (let i = 0; i < 50; i += 1) share.push('other', i);
    share.keep(new Set(['backlog', 'other']));
    share.done('backlog', 'fast');
    share.done('new-3', 'fast');
    expect(startAll(share)).toEqual(['other', 'new-8']);
    // No longer kept: max-min as before.
    share.keep(new Set());
    share.done('new-4', 'fast');
    expect(startAll(share)).toEqual(['new-9']);
  });
});
