import { describe, it, expect } from 'vitest';
import { FairShare } from '../../../src/isolation/fair-share.js';
import { LimitGate } from '../../../src/isolation/limit-gate.js';
import type { Waiting } from '../../../src/isolation/scheduler.js';

const SLOTS = { capacity: 10, perTarget: 10, initialPerTarget: 5, maxTargets: 100 };

/** A gate over its own fair share; `seen`: every time it was given. */
function setup() {
  const share = new FairShare<Waiting<number>>(SLOTS);
  const seen: number[] = [];
  const gate = new LimitGate<number>(share, (nowMs) => seen.push(nowMs));
  const offer = (target: string, item: number, at: number) => {
    share.push(target, { item, kind: 'attempt', at, source: 'overflow' });
    gate.gate(target, at);
  };
  const start = (nowMs: number) => {
    gate.gateHeld(nowMs);
    const started = share.next();
    if (started) gate.started(started.target, nowMs, nowMs - started.item.at);
    return started?.item.item;
  };
  return { share, gate, seen, offer, start };
}

describe('LimitGate: a target held back by its limit gets no slot until the limit allows', () => {
  it('holds a limited target between its tokens, says when to wake, and lets it go when its turn comes', () => {
    const { gate, offer, start, seen } = setup();
    gate.setLimit('t', { rate: 1, burst: 1 }, 0);
    offer('t', 1, 0);
    offer('t', 2, 0);
    offer('u', 3, 0);
    expect(start(0)).toBe(1);
    expect(start(0)).toBe(3);
    expect(start(0)).toBeUndefined();
    expect(gate.wakeInMs(0)).toBe(1_000);
    expect(start(999)).toBeUndefined();
    expect(start(1_000)).toBe(2);
    expect(seen.at(-1)).toBe(1_000);
  });

  it('counts limited targets as such, and an unlimited one never', () => {
    const { gate } = setup();
    gate.setLimit('t', { concurrency: 1 }, 0);
    expect(gate.limited('t')).toBe(true);
    expect(gate.limited('u')).toBe(false);
    gate.setLimit('t', undefined, 0);
    expect(gate.limited('t')).toBe(false);
  });

  it("keeps what limited targets' items waited and their starts until the metrics take them", () => {
    const { gate, offer, start } = setup();
    gate.setLimit('t', { rate: 10, burst: 5 }, 0);
    offer('t', 1, 0);
    offer('t', 2, 20);
    offer('u', 3, 0);
    start(50);
    start(50);
    start(50);
    expect(gate.takeStats()).toEqual({ waitsMs: [50, 30], starts: new Map([['t', 2]]) });
    expect(gate.takeStats()).toEqual({ waitsMs: [], starts: new Map() });
  });

  it('a 429 with Retry-After holds the target back and returns the back-off to broadcast; a 200 does not', () => {
    const { gate, offer, start } = setup();
    expect(gate.answered('t', { status: 200, durationMs: 5 }, true, 0)).toBeUndefined();
    const backoff = gate.answered('t', { status: 429, retryAfter: '2', durationMs: 5 }, true, 0);
    expect(backoff).toEqual({ target: 't', factor: 1, untilMs: 2_000 });
    offer('t', 1, 0);
    expect(start(1_000)).toBeUndefined();
    expect(gate.limited('t')).toBe(true);
    expect(start(2_000)).toBe(1);
  });

  it('takes the items a rate keeps waiting past the bound out with their wait; those from a lane stay', () => {
    const { gate, share, start } = setup();
    gate.setLimit('t', { rate: 1, burst: 1 }, 0);
    for (const item of [1, 2, 3, 4]) share.push('t', { item, kind: 'attempt', at: 0, source: item === 4 ? 'lane' : 'overflow' });
    start(0);
    const out = gate.outwaiting(0, 1_500, 60_000);
    expect(out.map(({ item }) => item)).toEqual([3]);
    // Its turn is the second after the next token's, 2 s from now, less half the bound.
    expect(out[0]?.delayMs).toBe(2_000 - 750);
    expect(share.waiting('t')).toBe(2);
  });
});
