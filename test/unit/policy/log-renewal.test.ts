import { describe, expect, it } from 'vitest';
import { replay, type LogRecord } from '../../../src/policy/key-log.js';
import { KeyOrder } from '../../../src/policy/key-order.js';

const DAY = 86_400_000;
const fresh = (key: string, id: string) => ({ key, id, item: id });
const from = (key: string, id: string, offset: number) => ({ key, id, stamp: { kind: 'from' as const, offset }, item: id });
const at = (offset: number, record: LogRecord) => ({ offset, record });

/** A key `k` held by head `a` on day 0, with followers b, c, d logged at offsets 10, 11, 12. */
function heldKey(now: { ms: number }): KeyOrder<string> {
  const order = new KeyOrder<string>('w1', Number.POSITIVE_INFINITY, () => now.ms);
  order.arrive(fresh('k', 'a'));
  expect(order.held('k', 'a').records).toEqual([{ kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 0 }]);
  for (const id of ['b', 'c', 'd']) order.arrive(fresh('k', id));
  order.followerLogged('k', 10);
  order.followerLogged('k', 11);
  order.followerLogged('k', 12);
  return order;
}

describe('KeyOrder: a held key renewed in its log', () => {
  it('is renewable once its oldest record is older than the renewal age: the hold again, then a copy of each follower', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 7 * DAY;
    expect(order.renewable(now.ms - 7 * DAY)).toEqual([]);
    now.ms = 8 * DAY;
    expect(order.renewable(now.ms - 7 * DAY)).toEqual([{ key: 'k', offsets: [10, 11, 12] }]);
    const renewal = order.renew('k', [10, 11, 12]);
    expect(renewal).toEqual({
      records: [{ kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 8 * DAY }],
      copies: [
        { offset: 10, renews: 10 },
        { offset: 11, renews: 11 },
        { offset: 12, renews: 12 },
      ],
      behind: 'a',
      at: 8 * DAY,
    });
    // Each copy takes its follower's place; nothing is renewed again until the age has passed anew.
    for (const [offset, renews] of [
      [20, 10],
      [21, 11],
      [22, 12],
    ] as const)
      expect(order.followerLogged('k', offset, renews)).toEqual({ records: [], toLog: [] });
    expect(order.renewable(9 * DAY - 7 * DAY)).toEqual([]);
    expect(order.heldKeys()).toEqual([{ key: 'k', head: 'a', logged: 3 }]);
    // The head settles: the followers run from their copies, in order.
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 20 });
    order.arrive(from('k', 'b', 20));
    const ran = order.settled('k', 'b');
    expect(ran.records.map((r) => r.kind)).toEqual(['done', 'release']);
    expect(ran.records[0]).toMatchObject({ offset: 20 });
    expect(ran.read).toEqual({ key: 'k', offset: 21 });
  });

  it('a second renewal names the offsets the followers were first logged at', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    order.renew('k', [10, 11, 12]);
    order.followerLogged('k', 20, 10);
    order.followerLogged('k', 21, 11);
    order.followerLogged('k', 22, 12);
    now.ms = 16 * DAY;
    expect(order.renewable(now.ms - 7 * DAY)).toEqual([{ key: 'k', offsets: [20, 21, 22] }]);
    expect(order.renew('k', [20, 21, 22])?.copies).toEqual([
      { offset: 20, renews: 10 },
      { offset: 21, renews: 11 },
      { offset: 22, renews: 12 },
    ]);
  });

  it('a stopped key is renewed with a stop record', () => {
    const now = { ms: 0 };
    const order = new KeyOrder<string>('w1', Number.POSITIVE_INFINITY, () => now.ms);
    order.arrive(fresh('k', 'a'));
    order.settled('k', 'a', true);
    now.ms = 8 * DAY;
    expect(order.renew('k', [])?.records).toEqual([{ kind: 'stop', owner: 'w1', key: 'k', head: 'a', at: 8 * DAY }]);
  });

  it('waits while the key is not settled in its log: its head running, appends in flight, or followers changed since they were read', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    // Appends in flight: a later arrival is logged behind the head, not yet seen on the log.
    expect(order.arrive(fresh('k', 'e'))).toEqual({ kind: 'log', item: 'e', behind: 'a' });
    expect(order.renewable(DAY)).toEqual([]);
    expect(order.renew('k', [10, 11, 12])).toBeUndefined();
    order.followerLogged('k', 13);
    // Read before e was logged: the followers changed, so no renewal from that read.
    expect(order.renew('k', [10, 11, 12])).toBeUndefined();
    expect(order.renewable(DAY)).toEqual([{ key: 'k', offsets: [10, 11, 12, 13] }]);
    // The head's copy came back and runs: not held, so not renewed.
    order.arrive({ key: 'k', id: 'a', stamp: { kind: 'copy' }, item: 'a' });
    expect(order.renewable(DAY)).toEqual([]);
  });

  it('a copy of a follower that left the line meanwhile is ignored: its own done or hold ends the copy too', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    order.renew('k', [10, 11, 12]);
    // The head settled before the copies were seen: b (offset 10) is read to run.
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    expect(order.followerLogged('k', 20, 10)).toEqual({ records: [], toLog: [] });
    expect(order.followerLogged('k', 21, 11)).toEqual({ records: [], toLog: [] });
    order.arrive(from('k', 'b', 10));
    const ran = order.settled('k', 'b');
    expect(ran.records.map((r) => r.kind)).toEqual(['done', 'release']);
    expect(ran.records[0]).toMatchObject({ offset: 10 });
    expect(ran.read).toEqual({ key: 'k', offset: 21 });
  });

  it('a key restored from the log keeps the time of its oldest record and its copies', () => {
    const now = { ms: 20 * DAY };
    const order = new KeyOrder<string>('w2', Number.POSITIVE_INFINITY, () => now.ms);
    order.restore(
      new Map([
        ['k', { head: 'a', logged: [20, 30], copies: new Map([[20, 10]]), since: 15 * DAY }],
        ['old', { head: 'x', logged: [5] }],
      ]),
    );
    expect(order.renewable(now.ms - 7 * DAY)).toEqual([{ key: 'old', offsets: [5] }]);
    expect(order.renewable(now.ms - 4 * DAY)).toEqual([
      { key: 'k', offsets: [20, 30] },
      { key: 'old', offsets: [5] },
    ]);
    expect(order.renew('k', [20, 30])?.copies).toEqual([
      { offset: 20, renews: 10 },
      { offset: 30, renews: 30 },
    ]);
  });
});

describe('replay: renewed records', () => {
  const log = [
    at(0, { kind: 'claim', owner: 'w1' }),
    at(1, { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 100 }),
    at(2, { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', at: 101 }),
    at(3, { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a', at: 102 }),
    // The renewal: the claim, the hold and each follower again.
    at(4, { kind: 'claim', owner: 'w1', renew: true }),
    at(5, { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 900 }),
    at(6, { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', renews: 2, at: 900 }),
    at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a', renews: 3, at: 900 }),
    at(8, { kind: 'follower', owner: 'w1', key: 'k', id: 'd', behind: 'a', at: 950 }),
  ];
  const renewed = {
    head: 'a',
    logged: [6, 7, 8],
    copies: new Map([
      [6, 2],
      [7, 3],
    ]),
    since: 900,
  };

  it('each copy takes its follower place; the time is the oldest needed record', () => {
    expect(replay(log).get('k')).toEqual(renewed);
    expect(replay(log.slice(0, 4)).get('k')).toEqual({ head: 'a', logged: [2, 3], since: 100 });
  });

  it('a crash midway leaves no follower twice and none out of its place', () => {
    const midway = [...log.slice(0, 7), at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'e', behind: 'a', at: 950 })];
    expect(replay(midway).get('k')).toMatchObject({ head: 'a', logged: [6, 3, 7] });
  });

  it('retention dropping everything before the renewal leaves the same state', () => {
    expect(replay(log.slice(4)).get('k')).toEqual(renewed);
    // Dropped up to the first follower only: the copy of b goes back before c's.
    expect(replay(log.slice(3)).get('k')).toEqual(renewed);
  });

  it('a renewed claim never fences out a later claim of another worker', () => {
    const taken = [
      ...log.slice(0, 4),
      at(4, { kind: 'claim', owner: 'w2' }),
      at(5, { kind: 'claim', owner: 'w1', renew: true }),
      at(6, { kind: 'release', owner: 'w1', key: 'k', head: 'a' }),
    ];
    expect(replay(taken).get('k')).toEqual({ head: 'a', logged: [2, 3], since: 100 });
  });

  it('a follower that runs from its first offset while its copy is written: a crash before it settles keeps it; its done ends both', () => {
    // a settles after the copies are appended; b runs from offset 2 (no record until it settles).
    const running = [...log.slice(0, 7), at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a', renews: 3, at: 900 })];
    const released = [...running, at(8, { kind: 'release', owner: 'w1', key: 'k', head: 'a' })];
    expect(replay(released).get('k')?.logged).toEqual([6, 7]);
    expect(replay([...released, at(9, { kind: 'done', owner: 'w1', key: 'k', offset: 2 })]).get('k')?.logged).toEqual([7]);
    expect(replay([...released, at(9, { kind: 'hold', owner: 'w1', key: 'k', head: 'b', from: 2 })]).get('k')).toMatchObject({
      head: 'b',
      logged: [7],
    });
  });

  it('a copy of a follower that ran is no follower again', () => {
    const ran = [...log.slice(0, 4), at(4, { kind: 'done', owner: 'w1', key: 'k', offset: 2 }), ...log.slice(5, 7)];
    expect(replay(ran).get('k')).toEqual({ head: 'a', logged: [3], since: 102 });
  });
});
