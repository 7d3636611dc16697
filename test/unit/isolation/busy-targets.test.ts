import { describe, it, expect } from 'vitest';
import { TargetIsolation } from '../../../src/isolation/target-isolation.js';

import { POLICY } from './isolation-policy.js';

describe("TargetIsolation: a busy target's excess overflows", () => {
  it("moves a busy target's waiting lane items once its oldest waited OVERFLOW_AFTER, keeps overflow items, and moves new lane items at once", () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 20; i += 1) iso.offer('busy', i, 'lane', 0);
    for (let i = 100; i < 103; i += 1) iso.offer('busy', i, 'overflow', 0);
    const started = [];
    for (let next = iso.next(); next; next = iso.next()) started.push(next.item);
    // A new target holds its initial share (2) until it has earned more.
    expect(started).toEqual([0, 1]);
    expect(iso.sweep(199)).toEqual([]);
    expect(iso.sweep(200)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(iso.waiting('busy')).toBe(3);
    expect(iso.offer('busy', 20, 'lane', 250)).toBe('overflow');
    expect(iso.offer('busy', 104, 'overflow', 250)).toBe('queued');
  });

  it('moves only what leaves a full lane window room, newest first, and nothing out of a window with room', () => {
    const iso = new TargetIsolation<number>(POLICY);
    // Items below 100 came in through window a, the others through b; a holds 5 items too many, b none.
    const excess = new Map([
      ['a', 5],
      ['b', 0],
    ]);
    iso.watchWindows({ of: (item) => (item < 100 ? 'a' : 'b'), excess: (window) => excess.get(window) ?? 0 });
    for (let i = 0; i < 20; i += 1) iso.offer('busy', i, 'lane', 0);
    for (let i = 100; i < 110; i += 1) iso.offer('busy', i, 'lane', 0);
    iso.next();
    iso.next();
    // The newest five of window a leave, in their order; window b's have room to stay.
    expect(iso.sweep(200)).toEqual([15, 16, 17, 18, 19]);
    expect(iso.waiting('busy')).toBe(23);
    // Busy now: a new item of it moves at once only while its window is still too full.
    expect(iso.offer('busy', 20, 'lane', 250)).toBe('overflow');
    excess.set('a', 0);
    expect(iso.offer('busy', 21, 'lane', 250)).toBe('queued');
    expect(iso.offer('busy', 110, 'lane', 250)).toBe('queued');
  });

  it('two busy targets in one window share its excess in one sweep', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, capacity: 4 });
    iso.watchWindows({ of: () => 'a', excess: () => 6 });
    for (let i = 0; i < 10; i += 1) iso.offer('x', i, 'lane', 0);
    for (let i = 100; i < 110; i += 1) iso.offer('y', i, 'lane', 0);
    for (let next = iso.next(); next; next = iso.next());
    const moved = iso.sweep(200);
    expect(moved).toHaveLength(6);
    expect(iso.waiting('x') + iso.waiting('y')).toBe(20 - 4 - 6);
  });

  it('never moves a fast target whose items wait less than OVERFLOW_AFTER, nor one that holds less than its initial share', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 30; i += 1) iso.offer('fast', i, 'lane', 0);
    for (let next = iso.next(); next; next = iso.next()) iso.complete('fast', next.kind, { status: 200, durationMs: 5 }, 100);
    expect(iso.sweep(150)).toEqual([]);
    // 'starved' waits long, but only because others hold every slot: it is not the busy one.
    const crowded = new TargetIsolation<number>({ ...POLICY, capacity: 2 });
    crowded.offer('a', 1, 'lane', 0);
    crowded.offer('b', 2, 'lane', 0);
    crowded.next();
    crowded.next();
    crowded.offer('starved', 3, 'lane', 0);
    expect(crowded.sweep(10_000)).toEqual([]);
  });

  it('moves a target only where its attempts take much longer than a move: one answering about as fast as a move stays', () => {
    const busyWith = (attemptMs: number, moveMs = 20) => {
      const iso = new TargetIsolation<number>(POLICY);
      iso.moveTook(moveMs);
      for (let i = 0; i < 12; i += 1) iso.offer('t', i, 'lane', 0);
      const first = iso.next()!;
      iso.next();
      iso.complete('t', first.kind, { status: 200, durationMs: attemptMs }, 100);
      iso.next();
      return iso.sweep(400).length;
    };
    // A saturated worker: attempts take 40 ms of waiting for the event loop, a move takes 20 ms.
    expect(busyWith(40)).toBe(0);
    // A receiver that answers in 300 ms: what waits behind its backlog is worth the moves.
    expect(busyWith(300)).toBeGreaterThan(0);
    // Even when moves take 200 ms on a loaded broker (their confirms queue up): 150 ms attempts or more.
    expect(busyWith(300, 200)).toBeGreaterThan(0);
    expect(busyWith(100, 200)).toBe(0);
    // No move timed yet (a pre-filled queue at start): only attempts slow by any measure are moved.
    expect(busyWith(40, 0)).toBe(0);
    expect(busyWith(300, 0)).toBeGreaterThan(0);
  });

  it('a saturated worker (its event loop busy) moves no backlog for attempt times its own waiting explains; a hanging target still moves', () => {
    const busyWith = (attemptMs: number, loopBusy: number[]) => {
      const iso = new TargetIsolation<number>(POLICY);
      for (let i = 0; i < 12; i += 1) iso.offer('t', i, 'lane', 0);
      const first = iso.next()!;
      iso.next();
      iso.complete('t', first.kind, { status: 200, durationMs: attemptMs }, 100);
      iso.next();
      let moved = 0;
      loopBusy.forEach((busy, i) => (moved += iso.sweep(350 + i * 50, busy).length));
      return moved;
    };
    // No move timed yet (a pre-filled queue at start): 300 ms attempts, the loop busy all the time.
    expect(busyWith(300, [1])).toBe(0);
    // The same attempts with the loop mostly idle: the receiver is slow, its backlog moves.
    expect(busyWith(300, [0.1])).toBeGreaterThan(0);
    // Saturated until the average says not: one idle sweep after a busy stretch is not enough.
    const busyStretch = Array<number>(10).fill(1);
    expect(busyWith(300, [...busyStretch, 0])).toBe(0);
    expect(busyWith(300, [...busyStretch, 0, 0, 0, 0])).toBeGreaterThan(0);
    // A target that hangs at its limit is worth moving however busy the loop: in a saturated worker
    // once none of its attempts ended for five times OVERFLOW_AFTER (a pre-filled queue's first attempts
    // take a while there, to any receiver).
    const hanging = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 12; i += 1) hanging.offer('h', i, 'lane', 0);
    while (hanging.next(0));
    expect(hanging.sweep(400, 1).length).toBe(0);
    expect(hanging.sweep(1_000, 1).length).toBeGreaterThan(0);
    const idle = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 12; i += 1) idle.offer('h', i, 'lane', 0);
    while (idle.next(0));
    expect(idle.sweep(200, 0).length).toBeGreaterThan(0);
  });

  it("a saturated worker moves no backlog of a target whose attempts take about what every target's take; a slow one among fast ones still moves", () => {
    /** Target t with a backlog and `attemptMs` attempts beside targets whose attempts took `others`, moves timed at `moveMs` (0: none timed yet): what a sweep moves. */
    const busyAmong = (attemptMs: number, others: number[], loopBusy = 1, moveMs = 20) => {
      const iso = new TargetIsolation<number>(POLICY);
      if (moveMs > 0) iso.moveTook(moveMs);
      others.forEach((ms, i) => {
        iso.offer(`o${i}`, 100 + i, 'lane', 0);
        const started = iso.next()!;
        iso.complete(started.target, started.kind, { status: 200, durationMs: ms }, 50);
      });
      for (let i = 0; i < 12; i += 1) iso.offer('t', i, 'lane', 0);
      const first = iso.next()!;
      iso.next();
      iso.complete('t', first.kind, { status: 200, durationMs: attemptMs }, 100);
      iso.next();
      return iso.sweep(400, loopBusy).length;
    };
    // Every target's attempts wait 150–300 ms for the worker (7–15× a move): none is worth a move.
    expect(busyAmong(300, [150, 200, 250, 280])).toBe(0);
    // A 1 s receiver among targets answering in 40 ms: its backlog moves.
    expect(busyAmong(1_000, [40, 40, 40])).toBeGreaterThan(0);
    // The rule is for a saturated worker: with its loop idle, the same 300 ms target moves.
    expect(busyAmong(300, [150, 200, 250, 280], 0)).toBeGreaterThan(0);
    // Slower than the others by far, it moves though no move was timed yet, or moves take long now.
    expect(busyAmong(300, [10, 10, 20], 1, 0)).toBeGreaterThan(0);
    expect(busyAmong(300, [10, 10, 20], 1, 400)).toBeGreaterThan(0);
    // Not by ALWAYS_WORTH_MS more than the median, or with no other target to compare: it stays.
    expect(busyAmong(100, [10, 10, 20], 1, 0)).toBe(0);
    expect(busyAmong(300, [], 1, 0)).toBe(0);
  });

  it('a quiet target is served before a busy one, and a busy target stops being busy once it stops waiting', () => {
    const iso = new TargetIsolation<number>(POLICY);
    for (let i = 0; i < 12; i += 1) iso.offer('busy', i, 'lane', 0);
    while (iso.next());
    expect(iso.sweep(300)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    iso.offer('quiet', 1, 'lane', 300);
    iso.complete('busy', 'attempt', { status: 200, durationMs: 300 }, 300);
    expect(iso.next()).toMatchObject({ target: 'quiet', item: 1 });
    // Busy lasts 4 × OVERFLOW_AFTER after its last sign.
    expect(iso.offer('busy', 50, 'lane', 1_000)).toBe('queued');
  });

  it('a cold target that waits while a busy one holds the slots is not busy: it keeps its place', () => {
    const iso = new TargetIsolation<number>({ ...POLICY, initialPerTarget: 5 });
    // 'busy' has earned every slot.
    for (let i = 0; i < 10; i += 1) iso.offer('busy', i, 'lane', 0);
    for (let i = 0; i < 10; i += 1) iso.complete('busy', iso.next()!.kind, { status: 200, durationMs: 300 }, 0);
    for (let i = 0; i < 30; i += 1) iso.offer('busy', i, 'lane', 0);
    while (iso.next());
    for (let i = 0; i < 20; i += 1) iso.offer('cold', i, 'lane', 0);
    // Three busy attempts end; the freed slots go to 'cold' (fewest in flight).
    for (let i = 0; i < 3; i += 1) iso.complete('busy', 'attempt', { status: 200, durationMs: 300 }, 300);
    while (iso.next());
    expect(iso.inFlight('cold')).toBe(3);
    const moved = iso.sweep(400);
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.every((item) => item < 30)).toBe(true);
    expect(iso.waiting('cold')).toBe(17);
  });

  /** 50 slots; 'busy' (300 ms answers) earned 40 of them and has 200 callbacks (1,000 on) in, all its slots taken. */
  const busyWithBacklog = () => {
    const iso = new TargetIsolation<number>({ ...POLICY, capacity: 50, perTarget: 50, initialPerTarget: 5 });
    for (let i = 0; i < 40; i += 1) iso.offer('busy', i, 'lane', 0);
    for (let i = 0; i < 40; i += 1) iso.complete('busy', iso.next()!.kind, { status: 200, durationMs: 300 }, 0);
    for (let i = 0; i < 200; i += 1) iso.offer('busy', 1_000 + i, 'lane', 0);
    while (iso.next());
    return iso;
  };

  it('many quiet targets waiting for a slot each are not busy: only the one that holds the most slots moves', () => {
    const iso = busyWithBacklog();
    for (let q = 0; q < 40; q += 1) for (let i = 0; i < 5; i += 1) iso.offer(`quiet-${q}`, q * 10 + i, 'lane', 0);
    // Ten busy attempts end: their slots go to quiet targets, one each.
    for (let i = 0; i < 10; i += 1) iso.complete('busy', 'attempt', { status: 200, durationMs: 300 }, 300);
    while (iso.next());
    const moved = iso.sweep(400);
    expect(moved.length).toBeGreaterThan(100);
    expect(moved.every((item) => item >= 1_000)).toBe(true);
    expect(iso.waiting('quiet-0')).toBe(4);
  });

  /**
   * 'busy' (300 ms answers) was found busy; then sixty other targets, whose attempts take `othersMs`,
   * take every slot, and 'busy' holds none. Ten more of its callbacks come in from its lane at 500.
   */
  const floodTakesSlots = (othersMs: number) => {
    const iso = busyWithBacklog();
    expect(iso.sweep(400).length).toBeGreaterThan(100);
    for (let q = 0; q < 60; q += 1) for (let i = 0; i < 6; i += 1) iso.offer(`other-${q}`, 10_000 + q * 10 + i, 'lane', 400);
    while (iso.inFlight('busy') > 0) iso.complete('busy', 'attempt', { status: 200, durationMs: 300 }, 450);
    while (iso.next());
    for (let q = 0; q < 60; q += 1)
      if (iso.inFlight(`other-${q}`) > 0) iso.complete(`other-${q}`, 'attempt', { status: 200, durationMs: othersMs }, 460);
    while (iso.next());
    expect(iso.inFlight('busy')).toBe(0);
    const offered = Array.from({ length: 10 }, (_, i) => iso.offer('busy', 2_000 + i, 'lane', 500));
    return { iso, overflowed: offered.filter((how) => how === 'overflow').length };
  };

  it('a busy target whose slots a flood of quiet targets took stays busy while its callbacks wait: its backlog keeps leaving the lane', () => {
    // The quiet targets answer in 10 ms: 'busy' is slow by itself. The first callback offered waits
    // (nothing of it was waiting yet), the rest leave the lane ...
    const { iso, overflowed } = floodTakesSlots(10);
    expect(overflowed).toBe(9);
    // ... and what waits of it moves at the next sweep, while the flood holds the slots.
    expect(iso.sweep(800)).toEqual([2_000]);
  });

  it('equal targets through a loaded worker are not kept busy once others take their slots: their backlogs stay in the lanes', () => {
    // Every target's attempts take 300 ms: the worker is what they all wait for, not 'busy''s receiver.
    const { iso, overflowed } = floodTakesSlots(300);
    expect(overflowed).toBe(0);
    expect(iso.sweep(800)).toEqual([]);
  });

  /**
   * 'busy' (its backlog waiting) loses every slot to sixty other targets; its attempts took `busyMs`,
   * theirs `othersMs`. After a sweep with the loop busy `loopBusy`, thirty of theirs end: how many of
   * the slots 'busy' holds then.
   */
  const keptAfterFlood = (busyMs: number, othersMs: number, loopBusy: number) => {
    const iso = busyWithBacklog();
    for (let q = 0; q < 60; q += 1) for (let i = 0; i < 6; i += 1) iso.offer(`other-${q}`, 10_000 + q * 10 + i, 'lane', 400);
    while (iso.inFlight('busy') > 0) iso.complete('busy', 'attempt', { status: 200, durationMs: busyMs }, 450);
    while (iso.next());
    for (let q = 0; q < 60; q += 1)
      if (iso.inFlight(`other-${q}`) > 0) iso.complete(`other-${q}`, 'attempt', { status: 200, durationMs: othersMs }, 460);
    while (iso.next());
    expect(iso.inFlight('busy')).toBeLessThanOrEqual(1);
    expect(iso.sweep(500, loopBusy)).toEqual([]);
    let ended = 0;
    for (let q = 0; q < 60 && ended < 30; q += 1) {
      if (iso.inFlight(`other-${q}`) === 0) continue;
      iso.complete(`other-${q}`, 'attempt', { status: 200, durationMs: othersMs }, 520);
      ended += 1;
    }
    while (iso.next());
    return iso.inFlight('busy');
  };

  it('a backlog whose pace the saturated worker sets keeps up to half the slots through a flood of new targets; not one slow by itself, nor on an idle worker', () => {
    // Four workers on two cores: the backlog's attempts take 600 ms, the new targets' 250 ms.
    expect(keptAfterFlood(600, 250, 1)).toBe(25);
    // Its receiver is slow by itself (1 s against 60 ms): the slots go to the new targets, one each.
    expect(keptAfterFlood(1_000, 60, 1)).toBeLessThanOrEqual(2);
    // The worker is not saturated: max-min as ever.
    expect(keptAfterFlood(600, 250, 0)).toBeLessThanOrEqual(2);
  });
});
