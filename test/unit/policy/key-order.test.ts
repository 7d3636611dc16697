import { describe, expect, it } from 'vitest';
import { replay, type LogRecord } from '../../../src/policy/key-log.js';
import { KeyOrder } from '../../../src/policy/key-order.js';

const line = (...offsets: number[]) => offsets.map((offset) => ({ offset, seq: offset }));
const fresh = (key: string, id: string) => ({ key, id, item: id });
const copy = (key: string, id: string) => ({ key, id, stamp: { kind: 'copy' as const }, item: id });
const from = (key: string, id: string, offset: number) => ({ key, id, stamp: { kind: 'from' as const, offset }, item: id });

describe('KeyOrder', () => {
  it('runs a key one callback at a time, in arrival order; other keys do not wait', () => {
    const order = new KeyOrder<string>('w1');
    expect(order.arrive(fresh('k', 'a'))).toEqual({ kind: 'attempt', item: 'a' });
    expect(order.arrive(fresh('k', 'b'))).toEqual({ kind: 'wait' });
    expect(order.arrive(fresh('k', 'c'))).toEqual({ kind: 'wait' });
    expect(order.arrive(fresh('other', 'x'))).toEqual({ kind: 'attempt', item: 'x' });
    expect(order.settled('k', 'a')).toEqual({ records: [], toLog: [], next: 'b' });
    expect(order.settled('k', 'b')).toEqual({ records: [], toLog: [], next: 'c' });
    expect(order.settled('k', 'c')).toEqual({ records: [], toLog: [] });
    expect(order.settled('other', 'x')).toEqual({ records: [], toLog: [] });
    expect(order.size).toBe(0);
  });

  it("a head held again writes no new hold (the first stands, so a paused key's rechecks do not grow the log); its renewal age counts from the first", () => {
    const now = { ms: 1_000 };
    const order = new KeyOrder<string>('w1', Number.POSITIVE_INFINITY, () => now.ms);
    order.arrive(fresh('k', 'a'));
    order.arrive(fresh('k', 'b'));
    expect(order.held('k', 'a').records).toEqual([{ kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 1_000 }]);
    for (const ms of [16_000, 31_000]) {
      now.ms = ms;
      expect(order.arrive(copy('k', 'a'))).toEqual({ kind: 'attempt', item: 'a' });
      expect(order.held('k', 'a')).toMatchObject({ records: [], behind: 'a' });
    }
    expect(order.renewable(2_000).map((r) => r.key)).toEqual(['k']);
    // A head put back from the log is held with the offset it ran from: that hold is written.
    order.followerLogged('k', 10);
    order.arrive(copy('k', 'a'));
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    order.arrive(from('k', 'b', 10));
    expect(order.held('k', 'b').records).toMatchObject([{ kind: 'hold', head: 'b', from: 10 }]);
  });

  it('holds a failed head: its waiting followers and every later arrival go to the log, in order, until it is settled', () => {
    const order = new KeyOrder<string>('w1');
    order.arrive(fresh('k', 'a'));
    order.arrive(fresh('k', 'b'));
    const hold = order.held('k', 'a');
    expect(hold.records).toEqual([{ kind: 'hold', owner: 'w1', key: 'k', head: 'a' }]);
    expect(hold.toLog).toEqual(['b']);
    expect(order.arrive(fresh('k', 'c'))).toEqual({ kind: 'log', item: 'c', behind: 'a' });
    order.followerLogged('k', 10);
    order.followerLogged('k', 11);
    expect(order.heldKeys()).toEqual([{ key: 'k', head: 'a', logged: 2 }]);
    // A copy of something else is a duplicate of a head settled before: dropped.
    expect(order.arrive(copy('k', 'z'))).toEqual({ kind: 'drop', item: 'z' });
    expect(order.arrive(copy('k', 'a'))).toEqual({ kind: 'attempt', item: 'a' });
    // While the retried head runs, arrivals still go behind the logged ones.
    expect(order.arrive(fresh('k', 'd'))).toEqual({ kind: 'log', item: 'd', behind: 'a' });
    const release = order.settled('k', 'a');
    expect(release.records).toEqual([{ kind: 'release', owner: 'w1', key: 'k', head: 'a' }]);
    expect(release.read).toEqual({ key: 'k', offset: 10 });
    expect(order.arrive(from('k', 'b', 10))).toEqual({ kind: 'attempt', item: 'b' });
    // The same follower put back twice: the second is dropped.
    expect(order.arrive(from('k', 'b', 10)).kind).toBe('drop');
    order.followerLogged('k', 12);
    // With followers still in the log, a release ends any wait behind b too.
    expect(order.settled('k', 'b')).toEqual({
      records: [
        { kind: 'done', owner: 'w1', key: 'k', offset: 10, seq: 10 },
        { kind: 'release', owner: 'w1', key: 'k', head: 'b' },
      ],
      toLog: [],
      read: { key: 'k', offset: 11 },
    });
    order.arrive(from('k', 'c', 11));
    // c fails: its hold records the offset it ran from.
    expect(order.held('k', 'c').records).toEqual([{ kind: 'hold', owner: 'w1', key: 'k', head: 'c', from: 11, seq: 11 }]);
    expect(order.arrive(copy('k', 'c')).kind).toBe('attempt');
    expect(order.settled('k', 'c').read).toEqual({ key: 'k', offset: 12 });
    order.arrive(from('k', 'd', 12));
    expect(order.settled('k', 'd').records).toEqual([{ kind: 'done', owner: 'w1', key: 'k', offset: 12, seq: 12 }]);
    expect(order.size).toBe(0);
  });

  it('a follower appended but not yet seen on the log comes before the key runs anything else', () => {
    const order = new KeyOrder<string>('w1');
    order.arrive(fresh('k', 'a'));
    order.held('k', 'a');
    expect(order.arrive(fresh('k', 'b')).kind).toBe('log');
    order.arrive(copy('k', 'a'));
    // a is settled before b shows on the log: nothing runs, and a new arrival goes to the log too.
    expect(order.settled('k', 'a').read).toBeUndefined();
    expect(order.arrive(fresh('k', 'c')).kind).toBe('log');
    expect(order.followerLogged('k', 5).read).toEqual({ key: 'k', offset: 5 });
  });

  it('runs the held head again when its own message is delivered again, and a follower whose read failed stays first', () => {
    const order = new KeyOrder<string>('w1');
    order.restore(new Map([['k', { head: 'a', followers: line(3, 4) }]]));
    expect(order.arrive(fresh('k', 'b2'))).toEqual({ kind: 'log', item: 'b2', behind: 'a' });
    expect(order.arrive(fresh('k', 'a'))).toEqual({ kind: 'attempt', item: 'a' });
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 3 });
    order.readFailed('k', 3);
    // It stays the next head: a later follower or arrival never runs before it.
    expect(order.followerLogged('k', 9).read).toBeUndefined();
    expect(order.arrive(fresh('k', 'c'))).toEqual({ kind: 'log', item: 'c', behind: undefined });
    expect(order.retryRead('k').read).toEqual({ key: 'k', offset: 3 });
  });

  it('a follower whose put-back failed stays next: what arrived meanwhile waits behind it', () => {
    const order = new KeyOrder<string>('w1');
    order.arrive(fresh('k', 'a'));
    order.held('k', 'a');
    order.arrive(fresh('k', 'f'));
    order.followerLogged('k', 10);
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    expect(order.arrive(fresh('k', 'w'))).toEqual({ kind: 'wait' });
    expect(order.readFailed('k', 10)).toBe(true);
    expect(order.retryRead('k')).toEqual({ records: [], toLog: [], read: { key: 'k', offset: 10 } });
    expect(order.arrive(from('k', 'f', 10))).toEqual({ kind: 'attempt', item: 'f' });
    // Its put-back had been stored after all: a late failure of it retries nothing.
    expect(order.readFailed('k', 10)).toBe(false);
    expect(order.puttingBack('k', 10)).toBe(false);
    expect(order.settled('k', 'f').next).toBe('w');
  });

  it('restores a claimed shard: keys without a held head start their oldest follower', () => {
    const order = new KeyOrder<string>('w2');
    const reads = order.restore(
      new Map([
        ['held', { head: 'h', followers: line(1) }],
        ['free', { followers: line(2, 7) }],
      ]),
    );
    expect(reads).toEqual([{ key: 'free', offset: 2 }]);
    expect(order.heldKeys()).toEqual([{ key: 'held', head: 'h', logged: 1 }]);
  });
});

describe('KeyOrder across a handover', () => {
  const logAll = (records: LogRecord[], first: number) => records.map((record, i) => ({ offset: first + i, record }));

  it('runs a follower put back from the log that was running when its owner went away, known to the claim only by the followers behind it', () => {
    // w1: a is held, b and c wait in the log behind it; a is delivered and b is put back to run.
    const w1 = new KeyOrder<string>('w1');
    const log = logAll([{ kind: 'claim', owner: 'w1' }], 0);
    w1.arrive(fresh('k', 'a'));
    log.push(...logAll(w1.held('k', 'a').records, log.length));
    expect(w1.arrive(fresh('k', 'b'))).toEqual({ kind: 'log', item: 'b', behind: 'a' });
    expect(w1.arrive(fresh('k', 'c'))).toEqual({ kind: 'log', item: 'c', behind: 'a' });
    log.push(...logAll([{ kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a' }], log.length));
    w1.followerLogged('k', 2);
    log.push(...logAll([{ kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a' }], log.length));
    w1.followerLogged('k', 3);
    w1.arrive(copy('k', 'a'));
    const released = w1.settled('k', 'a');
    log.push(...logAll(released.records, log.length));
    expect(released.read).toEqual({ key: 'k', offset: 2 });
    expect(w1.arrive(from('k', 'b', 2))).toEqual({ kind: 'attempt', item: 'b' });
    // While b runs, d arrives and is logged behind b.
    expect(w1.arrive(fresh('k', 'd'))).toEqual({ kind: 'log', item: 'd', behind: 'b' });
    log.push(...logAll([{ kind: 'follower', owner: 'w1', key: 'k', id: 'd', behind: 'b' }], log.length));
    // b is delivered, but its records (done, release) never reach the log: the shard is handed on, and
    // the broker gives b's message, stamped with its offset, to the next owner.
    expect(w1.settled('k', 'b').records.map((record) => record.kind)).toEqual(['done', 'release']);

    const w2 = new KeyOrder<string>('w2');
    const saved = replay(log);
    expect(saved.get('k')).toMatchObject({ head: 'b', running: true, followers: line(2, 3, 5) });
    expect(w2.restore(saved)).toEqual([]);
    // Dropped as a duplicate, b would leave its key held for good, c and d in the log behind it.
    expect(w2.arrive(from('k', 'b', 2))).toEqual({ kind: 'attempt', item: 'b' });
    // A second delivery of it, while it runs, is a duplicate.
    expect(w2.arrive(from('k', 'b', 2)).kind).toBe('drop');
    expect(w2.settled('k', 'b')).toEqual({
      records: [
        { kind: 'done', owner: 'w2', key: 'k', offset: 2, seq: 2 },
        { kind: 'release', owner: 'w2', key: 'k', head: 'b' },
      ],
      toLog: [],
      read: { key: 'k', offset: 3 },
    });
    expect(w2.arrive(from('k', 'c', 3))).toEqual({ kind: 'attempt', item: 'c' });
    expect(w2.settled('k', 'c').read).toEqual({ key: 'k', offset: 5 });
  });

  it('drops a follower put back from the log for a head the claim found held: its copy in the delay path runs it', () => {
    const w2 = new KeyOrder<string>('w2');
    const saved = replay([
      { offset: 0, record: { kind: 'claim', owner: 'w1' } },
      { offset: 1, record: { kind: 'follower', owner: 'w1', key: 'k', id: 'b' } },
      { offset: 2, record: { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'b' } },
      { offset: 3, record: { kind: 'hold', owner: 'w1', key: 'k', head: 'b', from: 1 } },
    ]);
    expect(saved.get('k')).toMatchObject({ head: 'b', followers: line(2) });
    w2.restore(saved);
    expect(w2.arrive(from('k', 'b', 1)).kind).toBe('drop');
    expect(w2.arrive(copy('k', 'b'))).toEqual({ kind: 'attempt', item: 'b' });
  });
});

describe('KeyOrder stop', () => {
  it('a parked head stops its key: followers log, its replay runs it first, a release moves the key past it', () => {
    const order = new KeyOrder<string>('w1');
    order.arrive(fresh('k', 'a'));
    order.arrive(fresh('k', 'b'));
    const stop = order.settled('k', 'a', true);
    expect(stop).toEqual({ records: [{ kind: 'stop', owner: 'w1', key: 'k', head: 'a' }], toLog: ['b'], behind: 'a' });
    expect(order.heldKeys()).toEqual([{ key: 'k', head: 'a', logged: 1, stopped: true }]);
    order.followerLogged('k', 4);
    // The dead letter replayed into the shard is the stopped head: it runs.
    expect(order.arrive(fresh('k', 'a'))).toEqual({ kind: 'attempt', item: 'a' });
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 4 });
    const other = new KeyOrder<string>('w1');
    other.arrive(fresh('j', 'x'));
    other.settled('j', 'x', true);
    expect(other.release('j')).toEqual({ records: [{ kind: 'release', owner: 'w1', key: 'j', head: 'x' }], toLog: [] });
    expect(other.release('j').records).toEqual([]);
    expect(other.size).toBe(0);
  });

  it('replay keeps a stopped key stopped, and a release clears it', () => {
    const entries = [
      { offset: 0, record: { kind: 'claim', owner: 'w1' } },
      { offset: 1, record: { kind: 'stop', owner: 'w1', key: 'k', head: 'a' } },
      { offset: 2, record: { kind: 'follower', owner: 'w1', key: 'k', id: 'b' } },
    ] as const;
    expect(replay(entries).get('k')).toMatchObject({ head: 'a', stopped: true, followers: line(2) });
    const released = [...entries, { offset: 3, record: { kind: 'release', owner: 'w1', key: 'k', head: 'a' } } as const];
    expect(replay(released).get('k')).toMatchObject({ followers: line(2) });
  });
});

describe('KeyOrder.spill', () => {
  it("keeps a head's copy that is back before its hold is decided, and runs it once the hold is recorded", () => {
    const order = new KeyOrder<string>('w1');
    order.arrive(fresh('k', 'a'));
    order.arrive(fresh('k', 'b'));
    // The retry's copy is stored, then comes back (a short delay) before settle decides the hold.
    expect(order.arrive(copy('k', 'a'))).toEqual({ kind: 'wait' });
    const hold = order.held('k', 'a');
    expect(hold).toEqual({ records: [{ kind: 'hold', owner: 'w1', key: 'k', head: 'a' }], toLog: ['b'], behind: 'a', next: 'a' });
    // It runs now: another copy of it is a duplicate kept in its place, and later arrivals still log.
    expect(order.arrive(fresh('k', 'c'))).toEqual({ kind: 'log', item: 'c', behind: 'a' });
    expect(order.heldKeys()).toEqual([]);
    expect(order.settled('k', 'a').records).toEqual([{ kind: 'release', owner: 'w1', key: 'k', head: 'a' }]);
  });

  it('of two early copies keeps the latest; a head settled for good drops the one it kept', () => {
    const order = new KeyOrder<string>('w1');
    order.arrive(fresh('k', 'a'));
    expect(order.arrive({ ...copy('k', 'a'), item: 'a#1' })).toEqual({ kind: 'wait' });
    expect(order.arrive({ ...copy('k', 'a'), item: 'a#2' })).toEqual({ kind: 'drop', item: 'a#1' });
    expect(order.settled('k', 'a')).toEqual({ records: [], toLog: [], drop: 'a#2' });
    expect(order.size).toBe(0);
    // A stopped key drops it too, and a worker stopping gives it back with the waiting ones.
    order.arrive(fresh('k', 'x'));
    order.arrive({ ...copy('k', 'x'), item: 'x#1' });
    expect(order.settled('k', 'x', true).drop).toBe('x#1');
    order.arrive(fresh('j', 'y'));
    order.arrive({ ...copy('j', 'y'), item: 'y#1' });
    expect(order.takeWaiting()).toEqual(['y#1']);
    expect(order.held('j', 'y').next).toBeUndefined();
  });

  it("sends a key's burst to the log once maxWaiting wait behind its head, in order, and what comes after it too", () => {
    const order = new KeyOrder<string>('w1', 2);
    order.arrive(fresh('k', 'a'));
    expect(order.arrive(fresh('k', 'b'))).toEqual({ kind: 'wait' });
    expect(order.arrive(fresh('k', 'c'))).toEqual({ kind: 'wait' });
    expect(order.arrive(fresh('k', 'd'))).toEqual({ kind: 'spill', items: ['b', 'c', 'd'], behind: 'a' });
    expect(order.arrive(fresh('k', 'e'))).toEqual({ kind: 'log', item: 'e', behind: 'a' });
    // Another key's callbacks still wait in the worker.
    order.arrive(fresh('j', 'x'));
    expect(order.arrive(fresh('j', 'y'))).toEqual({ kind: 'wait' });
    for (const offset of [1, 2, 3, 4]) order.followerLogged('k', offset);
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 1 });
  });

  it('sends what waited too long behind a running head to the log, and what comes after it too', () => {
    const order = new KeyOrder<string>('w1');
    order.arrive({ ...fresh('k', 'a'), at: 0 });
    order.arrive({ ...fresh('k', 'b'), at: 1_000 });
    order.arrive({ ...fresh('k', 'c'), at: 50_000 });
    order.arrive({ ...fresh('j', 'x'), at: 0 });
    order.arrive({ ...fresh('j', 'y'), at: 55_000 });
    expect(order.spill(30_000)).toEqual([{ key: 'k', items: ['b', 'c'], behind: 'a' }]);
    expect(order.arrive({ ...fresh('k', 'd'), at: 60_000 }).kind).toBe('log');
    order.followerLogged('k', 1);
    order.followerLogged('k', 2);
    expect(order.settled('k', 'a')).toEqual({
      records: [{ kind: 'release', owner: 'w1', key: 'k', head: 'a' }],
      toLog: [],
      read: { key: 'k', offset: 1 },
    });
  });
});

describe('replay', () => {
  const at = (offset: number, record: LogRecord) => ({ offset, record });
  it('rebuilds held heads and unrun followers, and ignores a writer after a newer claim', () => {
    const entries = [
      at(0, { kind: 'claim', owner: 'w1' }),
      at(1, { kind: 'hold', owner: 'w1', key: 'k', head: 'a' }),
      at(2, { kind: 'follower', owner: 'w1', key: 'k', id: 'b' }),
      at(3, { kind: 'follower', owner: 'w1', key: 'k', id: 'c' }),
      at(4, { kind: 'release', owner: 'w1', key: 'k', head: 'a' }),
      at(5, { kind: 'done', owner: 'w1', key: 'k', offset: 2 }),
      at(6, { kind: 'hold', owner: 'w1', key: 'j', head: 'x' }),
      at(7, { kind: 'claim', owner: 'w2' }),
      // w1 lost the shard and wrote on: ignored.
      at(8, { kind: 'release', owner: 'w1', key: 'j', head: 'x' }),
      at(9, { kind: 'hold', owner: 'w2', key: 'k', head: 'c', from: 3 }),
      at(10, { kind: 'claim', owner: 'w3' }),
      at(11, { kind: 'hold', owner: 'w3', key: 'z', head: 'q' }),
    ];
    expect(replay(entries, 'w3')).toEqual(
      new Map([
        ['k', { head: 'c', followers: line() }],
        ['j', { head: 'x', followers: line() }],
      ]),
    );
    expect(replay(entries).get('z')).toMatchObject({ head: 'q', followers: line() });
  });

  it('a follower logged behind a head holds its key by that head until a release names it, the hold record missing', () => {
    const entries = [
      { offset: 0, record: { kind: 'claim', owner: 'w1' } },
      { offset: 1, record: { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a' } },
    ] as const;
    expect(replay(entries).get('k')).toMatchObject({ head: 'a', running: true, followers: line(1) });
    // A hold of that head names a copy in the delay path: it is held, no longer known only as running.
    const heldLater = [...entries, { offset: 2, record: { kind: 'hold', owner: 'w1', key: 'k', head: 'a' } } as const];
    expect(replay(heldLater).get('k')).toMatchObject({ head: 'a', followers: line(1) });
    const released = [...entries, { offset: 2, record: { kind: 'release', owner: 'w1', key: 'k', head: 'a' } } as const];
    expect(replay(released).get('k')).toMatchObject({ followers: line(1) });
  });

  it('forgets a key whose head was released and whose followers all ran', () => {
    const entries = [
      at(0, { kind: 'claim', owner: 'w1' }),
      at(1, { kind: 'hold', owner: 'w1', key: 'k', head: 'a' }),
      at(2, { kind: 'follower', owner: 'w1', key: 'k', id: 'b' }),
      at(3, { kind: 'release', owner: 'w1', key: 'k', head: 'a' }),
      at(4, { kind: 'done', owner: 'w1', key: 'k', offset: 2 }),
    ] as const;
    expect(replay(entries).size).toBe(0);
  });
});
