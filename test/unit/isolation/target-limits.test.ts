import { describe, expect, it } from 'vitest';
import { concurrencyShare, ROTATE_MS, workerShare } from '../../../src/isolation/fleet-share.js';
import { DECREASE_GAP_MS, INCREASE_STEP, MAX_PAUSE_MS, TargetLimits, TOO_MANY_RUN } from '../../../src/isolation/target-limits.js';
import { TargetIsolation, type IsolationPolicy } from '../../../src/isolation/target-isolation.js';
import { TokenBucket } from '../../../src/isolation/token-bucket.js';

const T = 'https://limited.example';

describe('TokenBucket', () => {
  it('lets a burst go at once, then one request per 1/rate, fractional shares included', () => {
    const bucket = new TokenBucket(10, 2, 0);
    bucket.take(0);
    bucket.take(0);
    expect(bucket.available(0)).toBe(false);
    expect(bucket.msUntilToken(0)).toBe(100);
    expect(bucket.available(99)).toBe(false);
    expect(bucket.available(100)).toBe(true);
    const slow = new TokenBucket(0.25, 1, 0);
    slow.take(0);
    expect(slow.msUntilToken(0)).toBe(4_000);
  });

  it('keeps no more than its capacity after an idle while, and a clock that steps back adds nothing', () => {
    const bucket = new TokenBucket(10, 3, 0);
    for (let i = 0; i < 3; i++) bucket.take(60_000);
    expect(bucket.available(60_000)).toBe(false);
    expect(bucket.available(50_000)).toBe(false);
    bucket.reshape(1, 1, 60_000);
    expect(bucket.msUntilToken(60_000)).toBe(1_000);
  });
});

describe('fleet share: each worker enforces its part of a fleet-wide limit', () => {
  it('splits the rate evenly and the burst too, at least one request', () => {
    expect(workerShare({ rate: 20 }, { size: 4, rank: 0 }, 1, 0)).toEqual({ rate: 5, burst: 1, concurrency: undefined });
    expect(workerShare({ rate: 100, burst: 40 }, { size: 4, rank: 3 }, 0.5, 0)).toEqual({ rate: 12.5, burst: 10, concurrency: undefined });
  });

  it('splits a concurrency in whole requests, the remainder to the lowest ranks: the sum is the limit', () => {
    const shares = [0, 1, 2].map((rank) => concurrencyShare(5, { size: 3, rank }, 0));
    expect(shares).toEqual([2, 2, 1]);
  });

  it('with fewer requests at once than workers, the rate is split over the workers holding a slot this turn: the fleet sends all of it', () => {
    const shares = [0, 1, 2, 3].map((rank) => workerShare({ rate: 20, concurrency: 3 }, { size: 4, rank }, 1, 0));
    expect(shares.map((share) => share.concurrency)).toEqual([1, 1, 1, 0]);
    const sending = shares.filter((share) => (share.concurrency ?? 0) > 0);
    expect(sending.reduce((sum, share) => sum + (share.rate ?? 0), 0)).toBeCloseTo(20);
    // As many requests at once as workers or more: the even split, as before.
    expect(workerShare({ rate: 20, concurrency: 8 }, { size: 4, rank: 0 }, 1, 0).rate).toBe(5);
  });

  it('with fewer requests at once than workers, the slots rotate so every worker gets turns, never more than the limit at a time', () => {
    const at = (nowMs: number): number[] => [0, 1, 2, 3].map((rank) => concurrencyShare(2, { size: 4, rank }, nowMs));
    expect(at(0)).toEqual([1, 1, 0, 0]);
    expect(at(ROTATE_MS)).toEqual([0, 1, 1, 0]);
    expect(at(3 * ROTATE_MS)).toEqual([1, 0, 0, 1]);
    for (let turn = 0; turn < 8; turn++) expect(at(turn * ROTATE_MS).reduce((a, b) => a + b)).toBe(2);
  });
});

describe('TargetLimits: rate, concurrency and back-off (AIMD)', () => {
  it('a target without a limit or back-off is never held', () => {
    const limits = new TargetLimits();
    expect(limits.governs(T)).toBe(false);
    expect(limits.mayStart(T, 1_000, 0)).toBe(true);
  });

  it('holds a limited target to its share of the rate, and follows the fleet', () => {
    const limits = new TargetLimits();
    limits.set(T, { rate: 20, burst: 1 }, 0);
    limits.setFleet({ size: 2, rank: 1 }, 0);
    let started = 0;
    for (let now = 0; now < 10_000; now += 5) {
      if (limits.mayStart(T, 0, now)) {
        limits.started(T, now);
        started += 1;
      }
    }
    expect(started).toBeGreaterThanOrEqual(100);
    expect(started).toBeLessThanOrEqual(101);
  });

  it('holds it to its share of the concurrency; only an attempt ending opens it (no timer)', () => {
    const limits = new TargetLimits();
    limits.set(T, { concurrency: 3 }, 0);
    expect(limits.mayStart(T, 2, 0)).toBe(true);
    expect(limits.msUntilOpen(T, 3, 0)).toBeUndefined();
    limits.set(T, undefined, 0);
    expect(limits.mayStart(T, 3, 0)).toBe(true);
    expect(limits.governs(T)).toBe(false);
  });

  it('a 429 with Retry-After pauses the target and halves its rate once per second; fast successes give it back step by step', () => {
    const limits = new TargetLimits();
    limits.set(T, { rate: 100 }, 0);
    expect(limits.answered(T, { status: 429, retryAfterMs: 2_000, fast: true }, 0)).toEqual({ target: T, factor: 0.5, untilMs: 2_000 });
    expect(limits.mayStart(T, 0, 1_999)).toBe(false);
    expect(limits.answered(T, { status: 429, retryAfterMs: 2_000, fast: true }, 10)).toBeUndefined();
    expect(limits.answered(T, { status: 429, retryAfterMs: 2_000, fast: true }, DECREASE_GAP_MS)).toEqual({
      target: T,
      factor: 0.25,
      untilMs: DECREASE_GAP_MS + 2_000,
    });
    for (let i = 0; i < 10; i++) limits.answered(T, { status: 200, retryAfterMs: undefined, fast: true }, 5_000);
    expect([...limits.current(5_000)][0]?.factor).toBeCloseTo(0.25 + 10 * INCREASE_STEP);
    limits.answered(T, { status: 200, retryAfterMs: undefined, fast: false }, 5_000);
    expect([...limits.current(5_000)][0]?.factor).toBeCloseTo(0.25 + 10 * INCREASE_STEP);
  });

  it('an unlimited target: a 503 with Retry-After pauses it; a run of 429s without one pauses it briefly; a pause is bounded', () => {
    const limits = new TargetLimits();
    expect(limits.answered(T, { status: 503, retryAfterMs: undefined, fast: true }, 0)).toBeUndefined();
    expect(limits.answered(T, { status: 503, retryAfterMs: 3_000, fast: true }, 0)).toEqual({ target: T, factor: 1, untilMs: 3_000 });
    expect(limits.mayStart(T, 0, 3_000)).toBe(true);
    expect(limits.governs(T)).toBe(false);
    for (let i = 1; i < TOO_MANY_RUN; i++)
      expect(limits.answered(T, { status: 429, retryAfterMs: undefined, fast: true }, 5_000)).toBeUndefined();
    expect(limits.answered(T, { status: 429, retryAfterMs: undefined, fast: true }, 5_000)).toMatchObject({ untilMs: 6_000 });
    expect(limits.answered(T, { status: 429, retryAfterMs: 86_400_000, fast: true }, 10_000)).toMatchObject({
      untilMs: 10_000 + MAX_PAUSE_MS,
    });
  });

  it("another worker's back-off: the lower rate and the later pause win", () => {
    const limits = new TargetLimits();
    limits.set(T, { rate: 10 }, 0);
    limits.shareBackoff({ target: T, factor: 0.5, untilMs: 1_500 }, 0);
    limits.shareBackoff({ target: T, factor: 0.75, untilMs: 1_000 }, 0);
    expect([...limits.current(0)]).toEqual([{ target: T, rate: 5, factor: 0.5, paused: true }]);
    expect(limits.msUntilOpen(T, 0, 0)).toBe(1_500);
  });
});

import { POLICY as BASE } from './isolation-policy.js';

const POLICY: IsolationPolicy = { ...BASE, initialPerTarget: 5 };

describe('TargetIsolation with a limit: a limited target gets no slot until its limit allows, and waiting moves it out of the lanes', () => {
  it('starts a limited target at its rate while another target takes every free slot', () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit(T, { rate: 10, burst: 1 }, 0);
    for (let i = 0; i < 5; i++) iso.offer(T, `l${i}`, 'overflow', 0);
    for (let i = 0; i < 5; i++) iso.offer('https://quiet.example', `q${i}`, 'lane', 0);
    const first = [...drain(iso, 0)];
    expect(first.filter((item) => item.startsWith('l'))).toEqual(['l0']);
    expect(first.filter((item) => item.startsWith('q'))).toHaveLength(5);
    expect(iso.wakeInMs(0)).toBe(100);
    expect([...drain(iso, 50)]).toEqual([]);
    expect([...drain(iso, 100)]).toEqual(['l1']);
  });

  it('its waiting callbacks from the lanes leave for the overflow queue, however fast its receiver (no move-worth test)', () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit(T, { rate: 1, burst: 1 }, 0);
    for (let i = 0; i < 4; i++) iso.offer(T, `l${i}`, 'lane', 0);
    expect([...drain(iso, 0)]).toEqual(['l0']);
    iso.complete(T, 'attempt', { status: 200, durationMs: 1 }, 1);
    iso.moveTook(50);
    expect(iso.sweep(100)).toEqual([]);
    expect(iso.sweep(250)).toEqual(['l1', 'l2', 'l3']);
    expect(iso.offer(T, 'l4', 'lane', 300)).toBe('overflow');
    expect(iso.offer(T, 'o1', 'overflow', 300)).toBe('queued');
    expect(iso.waiting(T)).toBe(1);
  });

  it('they leave even from a lane whose window has room: left unacked there, they would meet the consumer timeout', () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.watchWindows({ of: () => 'lane', excess: () => 0 });
    iso.setLimit(T, { rate: 1, burst: 1 }, 0);
    for (let i = 0; i < 4; i++) iso.offer(T, `l${i}`, 'lane', 0);
    expect([...drain(iso, 0)]).toEqual(['l0']);
    iso.complete(T, 'attempt', { status: 200, durationMs: 1 }, 1);
    expect(iso.sweep(250)).toEqual(['l1', 'l2', 'l3']);
    expect(iso.offer(T, 'l4', 'lane', 300)).toBe('overflow');
  });

  it('clearing the limit lets it go at once', () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit(T, { rate: 1, burst: 1 }, 0);
    for (let i = 0; i < 3; i++) iso.offer(T, `l${i}`, 'overflow', 0);
    expect([...drain(iso, 0)]).toEqual(['l0']);
    iso.setLimit(T, undefined, 10);
    expect([...drain(iso, 10)]).toEqual(['l1', 'l2']);
    expect(iso.wakeInMs(10)).toBeUndefined();
  });

  it('a 429 with Retry-After holds the target back and returns the back-off to broadcast', () => {
    const iso = new TargetIsolation<string>(POLICY);
    for (let i = 0; i < 3; i++) iso.offer(T, `l${i}`, 'overflow', 0);
    const [first] = drain(iso, 0, 1);
    expect(first).toBe('l0');
    const effects = iso.complete(T, 'attempt', { status: 429, retryAfter: '2', durationMs: 5 }, 10);
    expect(effects.backoff).toEqual({ target: T, factor: 1, untilMs: 2_010 });
    expect([...drain(iso, 1_000)]).toEqual([]);
    expect(iso.wakeInMs(1_000)).toBe(1_010);
    expect([...drain(iso, 2_010)]).toEqual(['l1', 'l2']);
  });
});

describe('TargetIsolation: a callback its limit holds back for long leaves the worker (outwaiting)', () => {
  it('the waiting attempts that would start more than the bound from now are taken out, newest, each with its wait', () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit(T, { rate: 1, burst: 1 }, 0);
    for (let i = 0; i < 40; i++) iso.offer(T, `l${i}`, 'overflow', 0);
    expect([...drain(iso, 0)]).toEqual(['l0']);
    // One a second: l1 starts in 1 s, l20 in 20 s, l21 in 21 s; each is back half the bound before its turn.
    const out = iso.outwaiting(0, 20_000, 3_600_000);
    expect(out.map(({ item }) => item)).toEqual(Array.from({ length: 19 }, (_, i) => `l${21 + i}`));
    expect(out.map(({ delayMs }) => delayMs)).toEqual(Array.from({ length: 19 }, (_, i) => (21 + i) * 1_000 - 10_000));
    expect(iso.waiting(T)).toBe(20);
    expect(iso.outwaiting(0, 20_000, 3_600_000)).toEqual([]);
  });

  it('leaves those from a lane: they move to the overflow queue and wait in the broker', () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit(T, { rate: 1, burst: 1 }, 0);
    for (let i = 0; i < 40; i++) iso.offer(T, `l${i}`, 'lane', 0);
    expect(iso.outwaiting(0, 20_000, 3_600_000)).toEqual([]);
  });

  it("caps each wait, leaves unlimited and short waits alone, and takes a receiver's long pause out too", () => {
    const iso = new TargetIsolation<string>(POLICY);
    iso.setLimit(T, { rate: 0.001, burst: 1 }, 0);
    for (let i = 0; i < 3; i++) iso.offer(T, `l${i}`, 'overflow', 0);
    iso.offer('https://free.example', 'f0', 'overflow', 0);
    [...drain(iso, 0)];
    expect(iso.outwaiting(0, 20_000, 60_000)).toEqual(
      [
        { item: 'l2', delayMs: 60_000 },
        { item: 'l1', delayMs: 60_000 },
      ].reverse(),
    );
    const paused = new TargetIsolation<string>(POLICY);
    for (let i = 0; i < 3; i++) paused.offer(T, `p${i}`, 'overflow', 0);
    [...drain(paused, 0, 1)];
    paused.complete(T, 'attempt', { status: 429, retryAfter: '50', durationMs: 5 }, 10);
    expect(paused.outwaiting(1_000, 20_000, 3_600_000).map(({ item, delayMs }) => [item, delayMs])).toEqual([
      ['p1', 39_010],
      ['p2', 39_010],
    ]);
  });
});

function* drain(iso: TargetIsolation<string>, nowMs: number, max = Number.POSITIVE_INFINITY): Generator<string> {
  for (let n = 0, next = iso.next(nowMs); next && n < max; next = n + 1 < max ? iso.next(nowMs) : undefined, n++) yield next.item;
}
