import { describe, it, expect } from 'vitest';
import { LANE_BUCKETS, laneBucket, laneOf, laneRoutingKey, topologyNames } from '../../../src/topology/topology-names.js';

describe('lane buckets (wire contract)', () => {
  it('is FNV-1a 32 of the origin modulo 64, as docs/wire-contract.md documents (and its Python example computes)', () => {
    expect(laneBucket('http://127.0.0.1:8080')).toBe(18);
    // FNV-1a of the empty string is its offset basis, 0x811c9dc5 = 2166136261.
    expect(laneBucket('')).toBe(2_166_136_261 % 64);
  });

  it('spreads origins over every bucket', () => {
    const seen = new Set(Array.from({ length: 2_000 }, (_, i) => laneBucket(`https://host-${i}.example`)));
    expect(seen.size).toBe(LANE_BUCKETS);
  });

  it('maps a bucket to lane bucket mod LANES, and names the lanes after P.work', () => {
    expect([laneOf(0, 8), laneOf(9, 8), laneOf(63, 8), laneOf(63, 1)]).toEqual([0, 1, 7, 0]);
    expect(laneRoutingKey(5)).toBe('deliver.5');
    expect(topologyNames('cr', 3).workQueues).toEqual(['cr.work', 'cr.work.1', 'cr.work.2']);
  });
});
