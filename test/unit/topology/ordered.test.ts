import { describe, expect, it } from 'vitest';
import { fnv1a32 } from '../../../src/formats/fnv1a.js';
import { delayRoutingKey, levelDelaySeconds } from '../../../src/topology/delay-levels.js';
import {
  DEFAULT_ORDERED_SHARDS,
  LANE_BUCKETS,
  MAX_PLUGIN_DELAY_MS,
  dueDestination,
  laneBucket,
  orderBucket,
  orderedRoute,
  orderedRoutingKey,
  orderedShard,
  topologyNames,
} from '../../../src/topology/topology-names.js';

/** FNV-1a 32 spelt out as its definition says, in BigInt: xor each byte in, multiply by the prime, keep 32 bits. */
function reference(text: string): bigint {
  let hash = 0x811c9dc5n;
  for (const byte of new TextEncoder().encode(text)) hash = ((hash ^ BigInt(byte)) * 0x01000193n) % 2n ** 32n;
  return hash;
}

describe('orderBucket (wire contract)', () => {
  it('is FNV-1a 32 of the key modulo 64: fixed vectors', () => {
    // Published FNV-1a 32 test vectors: "" is the offset basis 0x811c9dc5, "a" 0xe40c292c, "foobar" 0xbf9cf968.
    expect([reference(''), reference('a'), reference('foobar')]).toEqual([0x811c9dc5n, 0xe40c292cn, 0xbf9cf968n]);
    // 0x811c9dc5 % 64 = 0x05, 0xe40c292c % 64 = 0x2c, 0xbf9cf968 % 64 = 0x28.
    expect([orderBucket(''), orderBucket('a'), orderBucket('foobar')]).toEqual([5, 44, 40]);
    // UTF-8 bytes, not UTF-16 units (a key is ASCII, but the hash is the lanes' too): "café" is 0xa82b5049.
    expect(fnv1a32('café')).toBe(0xa82b5049);
    expect(orderBucket('order-42')).toBe(Number(reference('order-42') % 64n));
  });

  it('hashes like laneBucket, over every bucket', () => {
    for (const key of ['tenant-1', 'https://example.com', 'x']) expect(orderBucket(key)).toBe(laneBucket(key));
    const seen = new Set(Array.from({ length: 2_000 }, (_, i) => orderBucket(`customer-${i}`)));
    expect(seen.size).toBe(LANE_BUCKETS);
  });

  it('routes with ordered.<bucket>, into shard bucket mod shards', () => {
    expect(orderedRoutingKey(44)).toBe('ordered.44');
    expect([orderedShard(0, 4), orderedShard(5, 4), orderedShard(63, 4), orderedShard(63, 1), orderedShard(63, 64)]).toEqual([
      0, 1, 3, 0, 63,
    ]);
  });
});

describe('the ordered names', () => {
  it('one shard and one log stream per ORDERED_SHARDS, P.ordered.<n> and P.ordered.log.<n>', () => {
    expect(DEFAULT_ORDERED_SHARDS).toBe(4);
    expect(topologyNames('cr').orderedQueues).toEqual(['cr.ordered.0', 'cr.ordered.1', 'cr.ordered.2', 'cr.ordered.3']);
    const names = topologyNames('cr', 8, 2);
    expect(names.orderedQueues).toEqual(['cr.ordered.0', 'cr.ordered.1']);
    expect(names.orderedLogs).toEqual(['cr.ordered.log.0', 'cr.ordered.log.1']);
    expect(names.workQueues).toHaveLength(8);
  });
});

const names = topologyNames('cr');
const NOW = 1_700_000_000_000;
const immediate = { exchange: 'cr', routingKey: 'ordered.44', headers: {} };

describe('orderedRoute', () => {
  it('without a delay: exchange P, ordered.<bucket>, in either mode', () => {
    for (const mode of ['plugin', 'queues'] as const) {
      expect(orderedRoute(names, mode, 0, 44, NOW)).toEqual(immediate);
      expect(orderedRoute(names, mode, -5, 44, NOW)).toEqual(immediate);
    }
  });

  it('plugin mode: into P.due with due.o<bucket> and x-delay, clamped like the lanes', () => {
    expect(orderedRoute(names, 'plugin', 15_000, 44, NOW)).toEqual({
      exchange: 'cr',
      routingKey: 'due.o44',
      headers: { 'x-delay': 15_000 },
    });
    expect(orderedRoute(names, 'plugin', 2 ** 40, 44, NOW).headers).toEqual({ 'x-delay': MAX_PLUGIN_DELAY_MS });
  });

  it('queues mode: through the levels with o<bucket> as the last word, carrying its due time', () => {
    expect(orderedRoute(names, 'queues', 15_000, 44, NOW)).toEqual({
      exchange: 'cr.delay',
      routingKey: `${delayRoutingKey(levelDelaySeconds(15_000))}.o44`,
      headers: { 'x-callback-due-at': NOW + 15_000 },
    });
    expect(orderedRoute(names, 'queues', 15_000, 44, NOW).routingKey).toBe('x0.x0.x0.x0.x0.xe.o44');
  });

  it('queues mode: under a level, straight to the shard, held by the worker until due', () => {
    expect(orderedRoute(names, 'queues', 1_000, 44, NOW)).toEqual({ ...immediate, headers: { 'x-callback-due-at': NOW + 1_000 } });
  });
});

describe('dueDestination: where P.due moves a message that fell due', () => {
  it('a lane bucket to its lane, an ordered bucket to its shard, plain due to lane 0', () => {
    expect(dueDestination(names, 'due.5')).toBe('deliver.5');
    expect(dueDestination(names, 'due.o5')).toBe('ordered.5');
    expect(dueDestination(names, 'due.o63')).toBe('ordered.63');
    expect(dueDestination(names, 'due')).toBe('deliver');
  });

  it('keeps any other word as a lane bucket: the mandatory copy comes back and is parked', () => {
    expect(dueDestination(names, 'due.ox')).toBe('deliver.ox');
    expect(dueDestination(names, 'due.o')).toBe('deliver.o');
  });
});
