import { describe, it, expect } from 'vitest';
import { circuitWait, MAX_DEFERRALS } from '../../../src/isolation/scheduler.js';
import { scheduleLeftMs } from '../../../src/policy/retry-schedule.js';
import { TargetIsolation } from '../../../src/isolation/target-isolation.js';

import { POLICY } from './isolation-policy.js';

describe('circuitWait: an open circuit defers an attempt until a real one would have ended, then it is owed its request', () => {
  it('defers after 1 s, 2 s, 4 s … and owes the request once it waited the attempt timeout since it first came due', () => {
    const timeout = 10_000;
    let now = 1_000_000;
    let heldSince: number | undefined;
    let deferrals = 0;
    const delays: number[] = [];
    for (;;) {
      const wait = circuitWait(heldSince, deferrals, now, timeout);
      if (wait.owed) {
        expect(wait).toMatchObject({ forced: false, defer: { heldSince: 1_000_000 } });
        break;
      }
      delays.push(wait.defer.delayMs);
      ({ heldSince, deferrals } = wait.defer);
      now += wait.defer.delayMs;
    }
    expect(delays).toEqual([1_000, 2_000, 4_000, 3_000]);
    expect(now - 1_000_000).toBe(timeout);
  });

  it('an owed attempt its target has no room for waits as long as it has been owed (1 s to an attempt timeout), and is forced after MAX_DEFERRALS', () => {
    expect(circuitWait(0, 4, 20_000, 10_000)).toEqual({
      owed: true,
      forced: false,
      mayBorrow: true,
      expired: false,
      giveUpAt: Number.POSITIVE_INFINITY,
      defer: { delayMs: 10_000, heldSince: 0, deferrals: 5 },
    });
    // Just owed: looked at again after 1 s, then 1 s, 2 s, 4 s, 8 s, 10 s …: soon after a short outage ends, seldom in a long one.
    const waits: number[] = [];
    for (let now = 10_000, deferrals = 4; waits.length < 7; deferrals += 1) {
      const wait = circuitWait(0, deferrals, now, 10_000);
      waits.push(wait.defer.delayMs);
      now += wait.defer.delayMs;
    }
    expect(waits).toEqual([1_000, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    // Owed, but for less than another attempt timeout: it may not borrow idle slots yet.
    expect(circuitWait(0, 3, 12_000, 10_000)).toMatchObject({ owed: true, mayBorrow: false });
    expect(circuitWait(0, 6, 200_000, 500).defer.delayMs).toBe(1_000);
    expect(circuitWait(0, MAX_DEFERRALS, 300_000, 10_000)).toMatchObject({ owed: true, forced: true });
  });

  it("never waits less than the delay levels' unit, nor defers without end whatever the clocks say", () => {
    expect(circuitWait(0, 0, 9_800, 10_000)).toMatchObject({ owed: false, defer: { delayMs: 1_000 } });
    // A heldSince in the future (another worker's clock ahead) counts from now.
    expect(circuitWait(50_000, 0, 10_000, 10_000)).toMatchObject({ owed: false, defer: { heldSince: 10_000 } });
    expect(circuitWait(10_000, MAX_DEFERRALS, 10_001, 10_000_000)).toMatchObject({
      owed: true,
      forced: true,
      defer: { heldSince: 10_000 },
    });
  });
});

describe('circuitWait: the schedule keeps its time while the circuit is open', () => {
  // RETRY_SCHEDULE 1s,2s, MAX_ATTEMPTS 3, HTTP_TIMEOUT 5s: a first attempt due at 0 ends the schedule at 5+1+5+2+5 = 18 s.
  const left = scheduleLeftMs([1_000, 2_000], 3, 1, 5_000);

  it('is left: every attempt from the one due timing out, every delay as scheduled', () => {
    expect(left).toBe(18_000);
    expect(scheduleLeftMs([1_000, 2_000], 3, 2, 5_000)).toBe(5_000 + 2_000 + 5_000);
    expect(scheduleLeftMs([1_000, 2_000], 3, 3, 5_000)).toBe(5_000);
    // Past its schedule (a policy changed under it): nothing left.
    expect(scheduleLeftMs([1_000], 2, 5, 5_000)).toBe(0);
    // Past the schedule's end its last delay repeats (MAX_ATTEMPTS beyond it).
    expect(scheduleLeftMs([1_000], 4, 1, 1_000)).toBe(4 * 1_000 + 3 * 1_000);
  });

  it('is back by the end of its schedule, and expired from then on, waiting as usual if it is not dead-lettered', () => {
    const schedule = { leftMs: left, heldMs: 0 };
    expect(circuitWait(0, 3, 16_000, 5_000, schedule)).toMatchObject({ expired: false, giveUpAt: 18_000, defer: { delayMs: 2_000 } });
    expect(circuitWait(0, 3, 17_950, 5_000, schedule)).toMatchObject({ expired: false, defer: { delayMs: 100 } });
    expect(circuitWait(0, 4, 18_000, 5_000, schedule)).toMatchObject({ expired: true, owed: true, defer: { delayMs: 5_000 } });
  });

  it('ends sooner by what circuits held its earlier attempts, not by time it waited otherwise', () => {
    // Attempt 2 (12 s left) due at 20 s, its first attempt held 13 s before its request: ends at 19 s.
    const held = { leftMs: scheduleLeftMs([1_000, 2_000], 3, 2, 5_000), heldMs: 13_000 };
    expect(circuitWait(undefined, 0, 20_000, 5_000, held)).toMatchObject({ expired: true, giveUpAt: 19_000 });
    // The same attempt never held before (say it waited out a broker's restart): its whole rest is ahead.
    expect(circuitWait(undefined, 0, 20_000, 5_000, { ...held, heldMs: 0 })).toMatchObject({ expired: false, giveUpAt: 32_000 });
    // Owed at 14 s, a request would end after the end at 18 s: it waits for the end instead.
    expect(circuitWait(9_000, 4, 14_000, 5_000, { leftMs: left, heldMs: 9_000 })).toMatchObject({
      owed: false,
      expired: false,
      giveUpAt: 18_000,
      defer: { delayMs: 1_000 },
    });
    expect(circuitWait(8_000, 4, 13_000, 5_000, { leftMs: left, heldMs: 8_000 })).toMatchObject({ owed: true });
  });
});

/** Target t's circuit opened by two timeouts (DEGRADE_THRESHOLD 2); the worker's 10 slots idle. */
function openedByTwoTimeouts(): TargetIsolation<number> {
  const iso = new TargetIsolation<number>({ ...POLICY, degradeThreshold: 2, slowThresholdMs: 100 });
  iso.offer('t', 1, 'lane', 0);
  iso.offer('t', 2, 'lane', 0);
  for (let next = iso.next(); next; next = iso.next());
  iso.complete('t', 'attempt', { error: 'timeout', durationMs: 1_000 }, 1_000);
  iso.complete('t', 'attempt', { error: 'timeout', durationMs: 1_000 }, 1_000);
  return iso;
}

describe('TargetIsolation: an owed attempt of a target whose circuit is open', () => {
  it('a deferred callback at an attempt number the target has not answered here gets its request at once, one such request at a time per attempt number', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, degradeThreshold: 2, slowThresholdMs: 100 });
    iso.offer('t', 1, 'lane', 0);
    iso.offer('t', 2, 'lane', 0);
    for (let next = iso.next(); next; next = iso.next());
    iso.complete('t', 'attempt', { error: 'timeout', durationMs: 1_000 }, 1_000, { attempt: 1 });
    iso.complete('t', 'attempt', { error: 'timeout', durationMs: 1_000 }, 1_000, { attempt: 1 });
    expect(iso.state('t')).toBe('degraded');
    const notOwed = { owed: false, forced: false, mayBorrow: false };
    // Attempt 1 was answered (it failed): not owed yet, it waits.
    expect(iso.offerOwed('t', 3, 'lane', 1_500, notOwed, 1)).toBe('circuit-open');
    // Attempt 2 never was: one request asks, at once; a second waits while it is under way.
    expect(iso.offerOwed('t', 4, 'lane', 1_500, notOwed, 2)).toBe('queued');
    expect(iso.offerOwed('t', 5, 'lane', 1_500, notOwed, 2)).toBe('circuit-open');
    expect(iso.next()).toMatchObject({ item: 4, kind: 'attempt' });
    iso.complete('t', 'attempt', { error: 'timeout', durationMs: 1_000 }, 2_500, { attempt: 2 });
    // Answered now (a failure): attempt 2 asks no more; attempt 3 may.
    expect(iso.offerOwed('t', 5, 'lane', 2_600, notOwed, 2)).toBe('circuit-open');
    expect(iso.offerOwed('t', 6, 'lane', 2_600, notOwed, 3)).toBe('queued');
    // A request that never ended (its channel closed) stops counting as under way after a minute.
    expect(iso.offerOwed('t', 7, 'lane', 2_700, notOwed, 3)).toBe('circuit-open');
    expect(iso.offerOwed('t', 7, 'lane', 62_600, notOwed, 3)).toBe('queued');
  });

  it('waits for a slot while the target holds fewer than its limit, and its success closes the circuit', () => {
    const iso = openedByTwoTimeouts();
    expect(iso.state('t')).toBe('degraded');
    // Its limit is the initial share (2): two owed attempts are queued, a third waits again unless forced.
    const owed = { owed: true, forced: false, mayBorrow: false };
    expect(iso.offerOwed('t', 3, 'lane', 2_000, owed)).toBe('queued');
    expect(iso.offerOwed('t', 4, 'lane', 2_000, owed)).toBe('queued');
    expect(iso.offerOwed('t', 5, 'lane', 2_000, owed)).toBe('circuit-open');
    // Owed for an attempt timeout already, it may borrow the idle slots while fewer than half the
    // worker's 10 are taken or waited for (5).
    for (let item = 5; item <= 7; item += 1)
      expect(iso.offerOwed('t', item, 'lane', 2_000, { owed: true, forced: false, mayBorrow: true })).toBe('queued');
    expect(iso.offerOwed('t', 8, 'lane', 2_000, { owed: true, forced: false, mayBorrow: true })).toBe('circuit-open');
    expect(iso.offerOwed('t', 9, 'overflow', 2_000, { owed: true, forced: true, mayBorrow: false })).toBe('queued');
    expect(iso.sweep(60_000)).toEqual([]);
    const started = iso.next();
    expect(started).toMatchObject({ item: 3, kind: 'attempt' });
    iso.complete('t', 'attempt', { status: 200, durationMs: 5 }, 60_000);
    expect(iso.state('t')).toBe('healthy');
  });

  it("lends an open circuit's owed attempts idle slots up to half the worker, never the other half", () => {
    const iso = openedByTwoTimeouts();
    for (let item = 3; item <= 20; item += 1) iso.offerOwed('t', item, 'lane', 2_000, { owed: true, forced: true, mayBorrow: false });
    const started: number[] = [];
    for (let next = iso.next(); next; next = iso.next()) started.push(next.item);
    // 5 of 10 slots: the target's limit (2), then idle slots while fewer than half are taken.
    expect(started).toEqual([3, 4, 5, 6, 7]);
    // Another target's work still finds the other half free.
    for (let item = 100; item < 105; item += 1) iso.offer('u', item, 'lane', 2_000);
    const others: number[] = [];
    for (let next = iso.next(); next; next = iso.next()) others.push(next.item);
    expect(others).toEqual([100, 101]);
  });
});
