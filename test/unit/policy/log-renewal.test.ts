import { describe, expect, it } from 'vitest';
import { fencesToKeep, replay, type LogRecord } from '../../../src/policy/key-log.js';
import { KeyOrder } from '../../../src/policy/key-order.js';

const DAY = 86_400_000;
const fresh = (key: string, id: string) => ({ key, id, item: id });
const from = (key: string, id: string, offset: number) => ({ key, id, stamp: { kind: 'from' as const, offset }, item: id });
const at = (offset: number, record: LogRecord) => ({ offset, record });

/** A key `k` held by head `a` on day 0, with followers b, c, d logged at offsets 10, 11, 12 on day 0. */
function heldKey(now: { ms: number }): KeyOrder<string> {
  const order = new KeyOrder<string>('w1', Number.POSITIVE_INFINITY, () => now.ms);
  order.arrive(fresh('k', 'a'));
  expect(order.held('k', 'a').records).toEqual([{ kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 0 }]);
  for (const id of ['b', 'c', 'd']) order.arrive(fresh('k', id));
  for (const offset of [10, 11, 12]) order.followerLogged('k', offset, { at: now.ms });
  return order;
}

/** The copies of `renewal` seen on the log from `offset` on. */
function copiesLogged(order: KeyOrder<string>, offset: number, renews: number[], at: number): void {
  for (const [i, seq] of renews.entries())
    expect(order.followerLogged('k', offset + i, { renews: seq, at })).toEqual({ records: [], toLog: [] });
}

describe('KeyOrder: a held key renewed in its log', () => {
  it('is renewable once a record it needs is older than the renewal age: the hold again, then a copy of each follower', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 7 * DAY;
    expect(order.renewable(now.ms - 7 * DAY)).toEqual([]);
    now.ms = 8 * DAY;
    const before = now.ms - 7 * DAY;
    expect(order.renewable(before)).toEqual([{ key: 'k', offsets: [10, 11, 12] }]);
    expect(order.renew('k', before, [10, 11, 12])).toEqual({
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
    copiesLogged(order, 20, [10, 11, 12], 8 * DAY);
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
    const now = { ms: 8 * DAY };
    const order = heldKey({ ms: 0 });
    order.renew('k', DAY, [10, 11, 12]);
    copiesLogged(order, 20, [10, 11, 12], 8 * DAY);
    now.ms = 16 * DAY;
    expect(order.renewable(9 * DAY)).toEqual([{ key: 'k', offsets: [20, 21, 22] }]);
    expect(order.renew('k', 9 * DAY, [20, 21, 22])?.copies).toEqual([
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
    expect(order.renewable(DAY)).toEqual([{ key: 'k', offsets: [] }]);
    expect(order.renew('k', DAY, [])?.records).toEqual([{ kind: 'stop', owner: 'w1', key: 'k', head: 'a', at: 8 * DAY }]);
  });

  it('a busy key is renewed all the same: arrivals meanwhile come behind the copies, and a retried head keeps its hold', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    // An arrival is being appended (not yet seen on the log) while the old followers are read.
    expect(order.arrive(fresh('k', 'e'))).toEqual({ kind: 'log', item: 'e', behind: 'a' });
    expect(order.renewable(DAY)).toEqual([{ key: 'k', offsets: [10, 11, 12] }]);
    order.followerLogged('k', 13, { at: now.ms });
    // The head's copy came back and is attempted: the log still holds its hold, which is written again.
    order.arrive({ key: 'k', id: 'a', stamp: { kind: 'copy' }, item: 'a' });
    const renewal = order.renew('k', DAY, [10, 11, 12]);
    expect(renewal?.records).toMatchObject([{ kind: 'hold', head: 'a' }]);
    expect(renewal?.copies.map((c) => c.renews)).toEqual([10, 11, 12]);
    copiesLogged(order, 20, [10, 11, 12], 8 * DAY);
    // e (13) stays last; the head fails again (the renewed hold stands) and the line runs b, c, d, e once it settles.
    expect(order.held('k', 'a').records).toEqual([]);
    order.arrive({ key: 'k', id: 'a', stamp: { kind: 'copy' }, item: 'a' });
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 20 });
    expect(order.renewable(DAY)).toEqual([]);
  });

  it('followers read in part are copied in part; the rest are asked for at the next turn, without the hold again', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    expect(order.renew('k', DAY, [10])).toMatchObject({ records: [{ kind: 'hold' }], copies: [{ offset: 10, renews: 10 }] });
    expect(order.renewable(DAY)).toEqual([{ key: 'k', offsets: [11, 12] }]);
    expect(order.renew('k', DAY, [11, 12])).toMatchObject({ records: [], copies: [{ renews: 11 }, { renews: 12 }] });
    expect(order.renewable(DAY)).toEqual([]);
  });

  it('a follower the log no longer has is not copied, nor asked for again until the age passes anew', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    expect(order.renew('k', DAY, [10, 12], [11])?.copies.map((c) => c.renews)).toEqual([10, 12]);
    expect(order.renewable(DAY)).toEqual([]);
    expect(order.renewable(9 * DAY)).toEqual([{ key: 'k', offsets: [10, 11, 12] }]);
  });

  it('a key whose head the log knows only from followers (it was running) is not renewed while that head runs', () => {
    const order = new KeyOrder<string>('w2', Number.POSITIVE_INFINITY, () => 8 * DAY);
    order.restore(new Map([['k', { head: 'a', running: true, followers: [{ offset: 3, seq: 3, at: 0 }] }]]));
    expect(order.renewable(DAY)).toEqual([]);
    expect(order.renew('k', DAY, [3])).toBeUndefined();
    // Nor once its own message is back and runs (from the log, or as the producer sent it): no copy of it
    // waits in the delay path, so a hold written now would hold the key for good after a crash.
    expect(order.arrive(from('k', 'a', 2)).kind).toBe('attempt');
    expect(order.renewable(DAY)).toEqual([]);
    const unstamped = new KeyOrder<string>('w3', Number.POSITIVE_INFINITY, () => 8 * DAY);
    unstamped.restore(new Map([['k', { head: 'a', running: true, followers: [{ offset: 3, seq: 3, at: 0 }] }]]));
    expect(unstamped.arrive(fresh('k', 'a')).kind).toBe('attempt');
    expect(unstamped.renewable(DAY)).toEqual([]);
    // It fails: now held for real (a hold record, its copy in the delay path), and renewable.
    expect(unstamped.held('k', 'a').records).toMatchObject([{ kind: 'hold', head: 'a' }]);
    expect(unstamped.renewable(DAY)).toEqual([{ key: 'k', offsets: [3] }]);
  });

  it('a copy of a follower that left the line meanwhile is ignored: its own done or hold ends the copy too', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    order.renew('k', DAY, [10, 11, 12]);
    // The head settled before the copies were seen: b (offset 10) is read to run.
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    copiesLogged(order, 20, [10, 11], 8 * DAY);
    order.arrive(from('k', 'b', 10));
    const ran = order.settled('k', 'b');
    expect(ran.records.map((r) => r.kind)).toEqual(['done', 'release']);
    expect(ran.records[0]).toMatchObject({ offset: 10 });
    expect(ran.read).toEqual({ key: 'k', offset: 21 });
  });

  it('a copy seen while its follower is being put back to run replaces it if the put-back fails', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    order.renew('k', DAY, [10, 11, 12]);
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    copiesLogged(order, 20, [10, 11, 12], 8 * DAY);
    order.readFailed('k', 10);
    expect(order.retryRead('k').read).toEqual({ key: 'k', offset: 20 });
    expect(order.putBackSeq('k', 20)).toBe(10);
  });

  it('a running head a taker knew only from followers, back from a copy that is gone, leaves its line by the seq it is stamped with', () => {
    // Its line holds a later copy (offset 8) of the follower it ran from (first at 2, put back from 5).
    const order = new KeyOrder<string>('w2', Number.POSITIVE_INFINITY, () => 0);
    order.restore(
      new Map([
        [
          'k',
          {
            head: 's',
            running: true,
            followers: [
              { offset: 8, seq: 2 },
              { offset: 9, seq: 9 },
            ],
          },
        ],
      ]),
    );
    expect(order.arrive({ ...from('k', 's', 5), stamp: { kind: 'from', offset: 5, seq: 2 } }).kind).toBe('attempt');
    const ran = order.settled('k', 's');
    expect(ran.records[0]).toEqual({ kind: 'done', owner: 'w2', key: 'k', offset: 5, seq: 2 });
    expect(ran.read).toEqual({ key: 'k', offset: 9 });
  });

  it('a follower gone from the log (past its retention) is done and its key moves on; one with a copy since is read from the copy', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    expect(order.gone('k', 10)).toEqual({
      records: [{ kind: 'done', owner: 'w1', key: 'k', offset: 10, seq: 10 }],
      toLog: [],
      read: { key: 'k', offset: 11 },
    });
    // Only for the follower being put back.
    expect(order.gone('k', 12).records).toEqual([]);
    now.ms = 8 * DAY;
    order.renew('k', DAY, [11, 12]);
    copiesLogged(order, 21, [11], 8 * DAY);
    expect(order.gone('k', 11)).toEqual({ records: [], toLog: [], read: { key: 'k', offset: 21 } });
  });

  it('a follower gone from the log whose renewal copy is still being written waits for it', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    order.renew('k', DAY, [10, 11, 12]);
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 10 });
    expect(order.gone('k', 10)).toEqual({ records: [], toLog: [] });
    copiesLogged(order, 20, [10], 8 * DAY);
    expect(order.retryRead('k').read).toEqual({ key: 'k', offset: 10 });
    expect(order.gone('k', 10).read).toEqual({ key: 'k', offset: 20 });
  });

  it('a follower whose put-back failed goes first again, as its copy', () => {
    const now = { ms: 0 };
    const order = heldKey(now);
    now.ms = 8 * DAY;
    order.renew('k', DAY, [10, 11, 12]);
    copiesLogged(order, 20, [10, 11, 12], 8 * DAY);
    expect(order.settled('k', 'a').read).toEqual({ key: 'k', offset: 20 });
    order.readFailed('k', 20);
    expect(order.retryRead('k').read).toEqual({ key: 'k', offset: 20 });
    order.arrive(from('k', 'b', 20));
    expect(order.settled('k', 'b').read).toEqual({ key: 'k', offset: 21 });
  });

  it('a key restored from the log keeps the times of its records and its copies', () => {
    const now = { ms: 20 * DAY };
    const order = new KeyOrder<string>('w2', Number.POSITIVE_INFINITY, () => now.ms);
    order.restore(
      new Map([
        [
          'k',
          {
            head: 'a',
            headAt: 18 * DAY,
            followers: [
              { offset: 20, seq: 10, at: 15 * DAY },
              { offset: 30, seq: 30, at: 17 * DAY },
            ],
          },
        ],
        ['old', { head: 'x', followers: [{ offset: 5, seq: 5 }] }],
      ]),
    );
    expect(order.renewable(now.ms - 7 * DAY)).toEqual([{ key: 'old', offsets: [5] }]);
    expect(order.renewable(now.ms - 4 * DAY)).toEqual([
      { key: 'k', offsets: [20] },
      { key: 'old', offsets: [5] },
    ]);
    expect(order.renew('k', now.ms - DAY, [20, 30])).toMatchObject({
      records: [{ kind: 'hold' }],
      copies: [
        { offset: 20, renews: 10 },
        { offset: 30, renews: 30 },
      ],
    });
  });
});

describe('replay: renewed records', () => {
  const log = [
    at(0, { kind: 'claim', owner: 'w1' }),
    at(1, { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 100 }),
    at(2, { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', at: 101 }),
    at(3, { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a', at: 102 }),
    // The renewal: the claim (naming where w1's first one is), the hold and each follower again.
    at(4, { kind: 'claim', owner: 'w1', first: 0 }),
    at(5, { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 900 }),
    at(6, { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', renews: 2, at: 900 }),
    at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a', renews: 3, at: 900 }),
    at(8, { kind: 'follower', owner: 'w1', key: 'k', id: 'd', behind: 'a', at: 950 }),
  ];
  const renewed = {
    head: 'a',
    headAt: 900,
    followers: [
      { offset: 6, seq: 2, at: 900 },
      { offset: 7, seq: 3, at: 900 },
      { offset: 8, seq: 8, at: 950 },
    ],
  };
  const offsets = (saved: { followers: Array<{ offset: number }> } | undefined) => saved?.followers.map((f) => f.offset);

  it('each copy takes its follower place, with the time it was written', () => {
    expect(replay(log).get('k')).toEqual(renewed);
    expect(replay(log.slice(0, 4)).get('k')).toEqual({
      head: 'a',
      headAt: 100,
      followers: [
        { offset: 2, seq: 2, at: 101 },
        { offset: 3, seq: 3, at: 102 },
      ],
    });
  });

  it('a crash midway leaves no follower twice and none out of its place', () => {
    const midway = [...log.slice(0, 7), at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'e', behind: 'a', at: 950 })];
    expect(offsets(replay(midway).get('k'))).toEqual([6, 3, 7]);
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
      at(5, { kind: 'claim', owner: 'w1', first: 0 }),
      at(6, { kind: 'release', owner: 'w1', key: 'k', head: 'a' }),
    ];
    expect(replay(taken).get('k')).toMatchObject({ head: 'a' });
    expect(offsets(replay(taken).get('k'))).toEqual([2, 3]);
  });

  it("once retention drops the later claim too, its owner's renewal still fences out the stale owner", () => {
    // w2 took the shard at 4; w1, not knowing yet, renewed its claim and released a; w2 renewed its own later.
    const taken = [
      ...log.slice(0, 4),
      at(4, { kind: 'claim', owner: 'w2' }),
      at(5, { kind: 'claim', owner: 'w1', first: 0 }),
      at(6, { kind: 'release', owner: 'w1', key: 'k', head: 'a' }),
      at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'x', at: 500 }),
      at(8, { kind: 'claim', owner: 'w2', first: 4 }),
      at(9, { kind: 'hold', owner: 'w2', key: 'k', head: 'a', at: 900 }),
      at(10, { kind: 'follower', owner: 'w2', key: 'k', id: 'b', behind: 'a', renews: 2, at: 900 }),
      at(11, { kind: 'follower', owner: 'w2', key: 'k', id: 'c', behind: 'a', renews: 3, at: 900 }),
    ];
    const whole = replay(taken).get('k');
    for (const cut of [5, 6, 8]) expect(replay(taken.slice(cut)).get('k')).toEqual(whole);
    expect(whole).toMatchObject({ head: 'a', headAt: 900 });
    expect(offsets(whole)).toEqual([10, 11]);
  });

  it('a done names the follower first logged, so a later copy outliving the copy it ran from ends too', () => {
    const renewedTwice = [
      ...log.slice(0, 4),
      at(4, { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 900 }),
      at(5, { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', renews: 2, at: 900 }),
      at(6, { kind: 'claim', owner: 'w1', first: 0 }),
      at(7, { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 1800 }),
      // Issued before b was taken out to run from 5, seen after.
      at(8, { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', renews: 2, at: 1800 }),
      at(9, { kind: 'release', owner: 'w1', key: 'k', head: 'a' }),
      at(10, { kind: 'done', owner: 'w1', key: 'k', offset: 5, seq: 2 }),
    ];
    expect(offsets(replay(renewedTwice).get('k'))).toEqual([3]);
    // Retention drops everything up to b's first copy: the done still ends the second.
    expect(offsets(replay(renewedTwice.slice(6)).get('k'))).toBeUndefined();
  });

  it('a taker writes again the fences it found, so a stale owner stays fenced out once the claims are gone', () => {
    // A took the shard at 10, B at 100. A, not knowing yet, renewed its claim and held k; B logged j; then C took over.
    const taken = [
      at(10, { kind: 'claim', owner: 'A' }),
      at(100, { kind: 'claim', owner: 'B' }),
      at(150, { kind: 'claim', owner: 'A', first: 10 }),
      at(151, { kind: 'hold', owner: 'A', key: 'k', head: 'x' }),
      at(160, { kind: 'follower', owner: 'B', key: 'j', id: 'j1' }),
    ];
    // A's own span (10 to 100) holds no record: only B's fence decides anything.
    expect(fencesToKeep(taken)).toEqual([{ owner: 'B', offset: 100 }]);
    const log2 = [
      ...taken,
      at(300, { kind: 'claim', owner: 'C' }),
      at(301, { kind: 'claim', owner: 'C', first: 300, fences: fencesToKeep(taken) }),
    ];
    const whole = replay(log2);
    expect([...whole.keys()]).toEqual(['j']);
    // Retention drops both earlier claims: the same state.
    expect(replay(log2.slice(2))).toEqual(whole);
    // A later taker keeps B's, which still decides records, as long as they are in the log.
    expect(fencesToKeep(log2.slice(2))).toEqual([{ owner: 'B', offset: 100 }]);
    expect(fencesToKeep([...log2.slice(2), at(400, { kind: 'done', owner: 'C', key: 'j', offset: 160 })])).toEqual([
      { owner: 'B', offset: 100 },
      { owner: 'C', offset: 300 },
    ]);
  });

  it('owners that came and went without a record (a crash loop) are not carried on', () => {
    const loop = [
      at(1, { kind: 'claim', owner: 'X1' }),
      at(2, { kind: 'claim', owner: 'X2' }),
      at(3, { kind: 'claim', owner: 'X3' }),
      at(4, { kind: 'claim', owner: 'X3', first: 3, fences: [{ owner: 'X0', offset: 0 }] }),
      at(5, { kind: 'follower', owner: 'X3', key: 'k', id: 'a' }),
    ];
    expect(fencesToKeep(loop)).toEqual([{ owner: 'X3', offset: 3 }]);
  });

  it('a follower that runs from its first offset while its copy is written: a crash before it settles keeps it; its done ends both', () => {
    // a settles after the copies are appended; b runs from offset 2 (no record until it settles).
    const running = [...log.slice(0, 7), at(7, { kind: 'follower', owner: 'w1', key: 'k', id: 'c', behind: 'a', renews: 3, at: 900 })];
    const released = [...running, at(8, { kind: 'release', owner: 'w1', key: 'k', head: 'a' })];
    expect(offsets(replay(released).get('k'))).toEqual([6, 7]);
    expect(offsets(replay([...released, at(9, { kind: 'done', owner: 'w1', key: 'k', offset: 2 })]).get('k'))).toEqual([7]);
    const heldAgain = replay([...released, at(9, { kind: 'hold', owner: 'w1', key: 'k', head: 'b', from: 2 })]).get('k');
    expect(heldAgain?.head).toBe('b');
    expect(offsets(heldAgain)).toEqual([7]);
  });

  it('a copy of a follower that ran is no follower again', () => {
    const ran = [...log.slice(0, 4), at(4, { kind: 'done', owner: 'w1', key: 'k', offset: 2 }), ...log.slice(5, 7)];
    expect(offsets(replay(ran).get('k'))).toEqual([3]);
  });
});
