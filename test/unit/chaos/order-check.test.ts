import { describe, expect, it } from 'vitest';
import { fateOf, FATES, idOf } from '../../../chaos/fates.js';
import type { Attempt } from '../../../chaos/ledger.js';
import { checkKey, checkOrder, endsCallback, settledAt, type KeyedCallback } from '../../../chaos/order-check.js';
import { judgeOrder, orderOf } from '../../../chaos/ordered.js';
import type { DeadEntry } from '../../../chaos/queues.js';

const MAX = 3;

/**
 * A hand-made request log: `[seq, attempt, status, tick, endTick?]` per request, in any order;
 * status 0 is a request left hanging (endTick: its socket closed); a request with a status and no
 * endTick was never answered (its worker was gone first).
 */
type Line = [seq: number, attempt: number, status: number, tick: number, endTick?: number];

function key(lines: Line[], extra: Record<number, Partial<KeyedCallback>> = {}, count?: number): KeyedCallback[] {
  const seqs = count ?? Math.max(-1, ...lines.map(([seq]) => seq), ...Object.keys(extra).map(Number)) + 1;
  return Array.from({ length: seqs }, (_, seq) => ({
    seq,
    id: `run.ok.${seq}`,
    requests: lines
      .filter(([s]) => s === seq)
      .map(([, attempt, status, tick, endTick]): Attempt => {
        const request: Attempt = { attempt, status, answered: status !== 0 && endTick !== undefined, at: tick, tick };
        if (endTick !== undefined) request.endTick = endTick;
        return request;
      }),
    parked: [],
    ...extra[seq],
  }));
}

const parked = (reason: string, attempts: number): DeadEntry[] => [{ id: 'x', reason, attempts, lastError: undefined }];
const inversionsOf = (callbacks: KeyedCallback[]) =>
  checkKey('k', callbacks, MAX).inversions.map(({ seq, tick, before, settledTick }) => ({ seq, tick, before, settledTick }));

describe('the ordered-key check', () => {
  it('passes a key whose callbacks each ended before the next was requested', () => {
    expect(
      inversionsOf(
        key([
          [0, 1, 200, 1, 2],
          [1, 1, 200, 3, 4],
          [2, 1, 200, 5, 6],
        ]),
      ),
    ).toEqual([]);
  });

  it('passes a retry that holds its key: the next is requested after the retry succeeded', () => {
    expect(
      inversionsOf(
        key([
          [0, 1, 503, 1, 2],
          [0, 2, 200, 3, 4],
          [1, 1, 200, 5, 6],
        ]),
      ),
    ).toEqual([]);
  });

  it('finds the next callback requested while the first waited for its retry', () => {
    const callbacks = key([
      [0, 1, 503, 1, 2],
      [1, 1, 200, 3, 4],
      [0, 2, 200, 5, 6],
    ]);
    expect(inversionsOf(callbacks)).toEqual([{ seq: 1, tick: 3, before: 0, settledTick: 6 }]);
    // The key's whole log comes with it, in arrival order, then when each callback was settled.
    expect(checkKey('k', callbacks, MAX).inversions[0]!.log).toEqual([
      '#1 +0.000s callback 0 attempt 1: 503, answered #2',
      '#3 +0.002s callback 1 attempt 1: 200, answered #4',
      '#5 +0.004s callback 0 attempt 2: 200, answered #6',
      'callback 0 (run.ok.0): settled #6',
      'callback 1 (run.ok.1): settled #4',
    ]);
  });

  it('finds a request that came before the 2xx of the one before it was written', () => {
    expect(
      inversionsOf(
        key([
          [0, 1, 200, 1, 3],
          [1, 1, 200, 2, 4],
        ]),
      ),
    ).toEqual([{ seq: 1, tick: 2, before: 0, settledTick: 3 }]);
  });

  it('allows an earlier callback again after a crash, once it had been delivered', () => {
    // 0 delivered, 1 requested, its worker killed before answering; the redelivery repeats 0, then 1.
    expect(
      inversionsOf(
        key([
          [0, 1, 200, 1, 2],
          [1, 1, 200, 3],
          [0, 1, 200, 4, 5],
          [1, 1, 200, 6, 7],
        ]),
      ),
    ).toEqual([]);
  });

  it('does not count a 2xx the worker never got as delivered', () => {
    // 0's worker died before the 200 went out: 1 must still wait for 0.
    expect(
      inversionsOf(
        key([
          [0, 1, 200, 1],
          [1, 1, 200, 2, 3],
          [0, 1, 200, 4, 5],
        ]),
      ),
    ).toEqual([{ seq: 1, tick: 2, before: 0, settledTick: 5 }]);
  });

  it('settles on the failure of the last attempt, and not before it is answered', () => {
    const lines: Line[] = [
      [0, 1, 500, 1, 2],
      [0, 2, 500, 3, 4],
      [0, 3, 500, 5, 7],
    ];
    const exhausted = { 0: { parked: parked('exhausted', 3) } };
    expect(inversionsOf(key([...lines, [1, 1, 200, 8, 9]], exhausted))).toEqual([]);
    expect(inversionsOf(key([...lines, [1, 1, 200, 6, 8]], exhausted))).toEqual([{ seq: 1, tick: 6, before: 0, settledTick: 7 }]);
  });

  it('settles a last attempt left hanging when its socket closes; an earlier hang settles nothing', () => {
    const lines: Line[] = [
      [0, 1, 0, 1, 2],
      [0, 2, 0, 3, 4],
      [0, 3, 0, 5, 7],
    ];
    expect(inversionsOf(key([...lines, [1, 1, 200, 8, 9]]))).toEqual([]);
    expect(inversionsOf(key([...lines, [1, 1, 200, 6, 8]]))).toEqual([{ seq: 1, tick: 6, before: 0, settledTick: 7 }]);
    expect(
      inversionsOf(
        key([
          [0, 1, 0, 1, 2],
          [1, 1, 200, 3, 4],
          [0, 2, 0, 5, 6],
          [0, 3, 0, 7, 8],
        ]),
      ),
    ).toEqual([{ seq: 1, tick: 3, before: 0, settledTick: 8 }]);
  });

  it('settles on a final 4xx at any attempt, but not on 408 or 429', () => {
    expect(
      inversionsOf(
        key([
          [0, 1, 404, 1, 2],
          [1, 1, 200, 3, 4],
        ]),
      ),
    ).toEqual([]);
    for (const status of [408, 429])
      expect(
        inversionsOf(
          key([
            [0, 1, status, 1, 2],
            [1, 1, 200, 3, 4],
            [0, 2, 200, 5, 6],
          ]),
        ),
      ).toEqual([{ seq: 1, tick: 3, before: 0, settledTick: 6 }]);
  });

  it('settles a cancelled callback from the moment its cancel was sent', () => {
    const lines: Line[] = [
      [0, 1, 500, 1, 2],
      [1, 1, 200, 4, 5],
    ];
    expect(inversionsOf(key(lines, { 0: { parked: parked('canceled', 1), cancelTick: 3 } }))).toEqual([]);
    expect(inversionsOf(key(lines, { 0: { parked: parked('canceled', 1), cancelTick: 6 } }))).toEqual([
      { seq: 1, tick: 4, before: 0, settledTick: 6 },
    ]);
  });

  it('times a park no answer accounts for by the arrival of its last attempt that reached the receiver', () => {
    // Parked exhausted after 2 attempts (an open circuit failed the third fast): settled after #4 at the earliest.
    const callbacks = key(
      [
        [0, 1, 500, 1, 2],
        [1, 1, 200, 3, 6],
        [0, 2, 500, 4, 5],
      ],
      { 0: { parked: parked('exhausted', 2) } },
    );
    expect(settledAt(callbacks[0]!, MAX)).toEqual({ tick: 4, untimed: true });
    expect(inversionsOf(callbacks)).toEqual([{ seq: 1, tick: 3, before: 0, settledTick: 4 }]);
    // Parked with no request at all: it may have been parked from the start.
    expect(inversionsOf(key([[1, 1, 200, 1, 2]], { 0: { parked: parked('exhausted', 3) } }))).toEqual([]);
  });

  it('holds every later callback behind an unsettled one, not just the next', () => {
    expect(
      inversionsOf(
        key([
          [0, 1, 200, 1, 2],
          [1, 1, 503, 3, 4],
          [2, 1, 200, 5, 6],
          [1, 2, 200, 7, 8],
        ]),
      ),
    ).toEqual([{ seq: 2, tick: 5, before: 1, settledTick: 8 }]);
  });

  it('counts a callback never settled (lost) as holding its key for good, one never accepted as holding nothing', () => {
    expect(inversionsOf(key([[1, 1, 200, 1, 2]], {}, 2))).toEqual([{ seq: 1, tick: 1, before: 0, settledTick: undefined }]);
    expect(inversionsOf(key([[1, 1, 200, 1, 2]], { 0: { unaccepted: true } }))).toEqual([]);
  });

  it('counts every request that came too early, the repeats of an early one too', () => {
    expect(
      inversionsOf(
        key([
          [0, 1, 503, 1, 2],
          [1, 1, 503, 3, 4],
          [1, 2, 200, 5, 6],
          [0, 2, 200, 7, 8],
        ]),
      ).map((x) => x.tick),
    ).toEqual([3, 5]);
  });

  it('reads the answers that end a callback', () => {
    const request = (attempt: number, status: number, endTick?: number): Attempt => ({
      attempt,
      status,
      answered: status !== 0 && endTick !== undefined,
      at: 0,
      tick: 0,
      ...(endTick === undefined ? {} : { endTick }),
    });
    expect(endsCallback(request(1, 204, 1), MAX)).toBe(true);
    expect(endsCallback(request(1, 204), MAX)).toBe(false);
    expect(endsCallback(request(2, 503, 1), MAX)).toBe(false);
    expect(endsCallback(request(3, 503, 1), MAX)).toBe(true);
    expect(endsCallback(request(1, 301, 1), MAX)).toBe(true);
    expect(endsCallback(request(3, 0), MAX)).toBe(false);
    expect(endsCallback(request(3, 0, 1), MAX)).toBe(true);
    expect(endsCallback(request(Number.NaN, 500, 1), MAX)).toBe(false);
  });

  it('sums the keys, and keeps the first inversion of a key with its log', () => {
    const keys = new Map([
      ['a', key([[0, 1, 200, 1, 2]])],
      [
        'b',
        key([
          [0, 1, 503, 3, 4],
          [1, 1, 200, 5, 6],
          [0, 2, 200, 7, 8],
        ]),
      ],
    ]);
    const verdict = checkOrder(keys, MAX);
    expect(verdict).toMatchObject({ keys: 2, callbacks: 3, requests: 4, inversions: 1, keysInverted: 1, untimedParks: 0 });
    expect(verdict.examples.map((x) => [x.key, x.seq, x.before, x.log.length])).toEqual([['b', 1, 0, 5]]);
  });
});

describe('ordered keys in a chaos run', () => {
  it('gives every third callback a key in turn, numbered within its key', () => {
    expect([0, 1, 2, 3, 4, 151, 154].map((n) => orderOf(n, 50))).toEqual([
      undefined,
      { key: 'key-00', seq: 0 },
      undefined,
      undefined,
      { key: 'key-01', seq: 0 },
      { key: 'key-00', seq: 1 },
      { key: 'key-01', seq: 1 },
    ]);
    expect(orderOf(1, 0)).toBeUndefined();
  });

  it('puts every fate among the ordered callbacks', () => {
    const fates = new Set(Array.from({ length: 300 }, (_, n) => n).flatMap((n) => (orderOf(n, 50) ? [fateOf(n)] : [])));
    expect(fates).toEqual(new Set(Object.keys(FATES)));
  });

  it('judges a run from the ledger by id', () => {
    const byId = new Map<string, Attempt[]>([
      [idOf('r', 1), [{ attempt: 1, status: 503, answered: true, at: 0, tick: 1, endTick: 2 }]],
      [idOf('r', 151), [{ attempt: 1, status: 200, answered: true, at: 0, tick: 3, endTick: 4 }]],
    ]);
    const verdict = judgeOrder({ run: 'r', callbacks: 152, keys: 50, byId, dead: [], unconfirmed: [], maxAttempts: MAX });
    expect(verdict).toMatchObject({ keys: 50, callbacks: 51, inversions: 1 });
    expect(verdict.examples[0]).toMatchObject({ key: 'key-00', seq: 1, before: 0, settledTick: undefined });
  });
});
