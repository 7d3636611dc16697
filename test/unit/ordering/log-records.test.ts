import { describe, expect, it } from 'vitest';
import { LOG_RECORD_HEADER, recordHeaders, recordOf } from '../../../src/ordering/log-records.js';
import type { LogRecord } from '../../../src/policy/key-log.js';

const RECORDS: LogRecord[] = [
  { kind: 'claim', owner: 'w1' },
  { kind: 'hold', owner: 'w1', key: 'k', head: 'a' },
  { kind: 'hold', owner: 'w1', key: 'k', head: 'c', from: 11 },
  { kind: 'stop', owner: 'w1', key: 'k', head: 'c', from: 12 },
  { kind: 'follower', owner: 'w1', key: 'k', id: 'b' },
  { kind: 'done', owner: 'w1', key: 'k', offset: 10 },
  { kind: 'release', owner: 'w1', key: 'k', head: 'a' },
  // Renewed: the claim again, a hold and a copy of a follower with their times.
  { kind: 'claim', owner: 'w1', first: 7 },
  { kind: 'hold', owner: 'w1', key: 'k', head: 'a', at: 1_764_000_000_000 },
  { kind: 'follower', owner: 'w1', key: 'k', id: 'b', behind: 'a', renews: 10, at: 1_764_000_000_000 },
  // A follower that ran from a copy: where it was first logged.
  { kind: 'done', owner: 'w1', key: 'k', offset: 20, seq: 10 },
  { kind: 'hold', owner: 'w1', key: 'k', head: 'b', from: 20, seq: 10 },
  // A taker's fences, written again behind its claim.
  {
    kind: 'claim',
    owner: 'w3',
    first: 300,
    fences: [
      { owner: 'w1', offset: 10 },
      { owner: 'w2', offset: 100 },
    ],
  },
];

describe('log records', () => {
  it('reads back every kind of record from its headers', () => {
    for (const record of RECORDS) expect(recordOf(recordHeaders(record))).toEqual(record);
  });

  it('a claim whose fences do not read as such counts as a claim without them', () => {
    for (const fences of ['not json', '{"w1":1}', '[["w1","x"]]', '[[1,2]]'])
      expect(
        recordOf({ [LOG_RECORD_HEADER.record]: 'claim', [LOG_RECORD_HEADER.owner]: 'w3', [LOG_RECORD_HEADER.fences]: fences }),
      ).toEqual({
        kind: 'claim',
        owner: 'w3',
      });
  });

  it('a renewed claim of an earlier version (x-order-renew, no offset) is no record', () => {
    expect(recordOf({ [LOG_RECORD_HEADER.record]: 'claim', [LOG_RECORD_HEADER.owner]: 'w1', 'x-order-renew': 1 })).toBeUndefined();
  });

  it('every header it writes is an x-order- header, so a follower keeps its callback headers apart', () => {
    for (const record of RECORDS) for (const name of Object.keys(recordHeaders(record))) expect(name).toMatch(/^x-order-/);
    expect(Object.values(LOG_RECORD_HEADER).every((name) => name.startsWith('x-order-'))).toBe(true);
  });

  it('takes strings as a stream gives them back (byte arrays) and offsets as bigints', () => {
    const headers = {
      'x-order-record': 'stop',
      'x-order-owner': Buffer.from('w1'),
      'x-order-key': Buffer.from('k'),
      'x-order-head': 'c',
      'x-order-from': BigInt(7),
    };
    expect(recordOf(headers)).toEqual({ kind: 'stop', owner: 'w1', key: 'k', head: 'c', from: 7 });
  });

  it('skips what is not a record: no owner, no key, an unknown kind, a missing field', () => {
    expect(recordOf({})).toBeUndefined();
    expect(recordOf({ 'x-callback-id': 'a' })).toBeUndefined();
    expect(recordOf({ 'x-order-record': 'hold', 'x-order-key': 'k', 'x-order-head': 'a' })).toBeUndefined();
    expect(recordOf({ 'x-order-record': 'hold', 'x-order-owner': 'w1', 'x-order-head': 'a' })).toBeUndefined();
    expect(recordOf({ 'x-order-record': 'hold', 'x-order-owner': 'w1', 'x-order-key': 'k' })).toBeUndefined();
    expect(recordOf({ 'x-order-record': 'done', 'x-order-owner': 'w1', 'x-order-key': 'k', 'x-order-offset': 1.5 })).toBeUndefined();
    expect(recordOf({ 'x-order-record': 'vanish', 'x-order-owner': 'w1', 'x-order-key': 'k' })).toBeUndefined();
  });
});
