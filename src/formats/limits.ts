/**
 * The bounds settings are checked against, fixed by the wire contract and the topology: the lane
 * (and ordered) buckets a routing key can name (topology/topology-names.ts) and the longest delay the delay levels can hold
 * (topology/delay-levels.ts). They live here, at the bottom, so that the settings can check against
 * them without depending on the code that builds the topology.
 */

/** Routing-key buckets of the lanes: `deliver.<bucket>`, bucket 0 … LANE_BUCKETS − 1. */
export const LANE_BUCKETS = 64;

/** Lanes of a topology unless LANES says otherwise. */
export const DEFAULT_LANES = 8;

/**
 * Shards of the ordered queues unless ORDERED_SHARDS says otherwise. An ordered callback's bucket
 * (`ordered.<bucket>`, 0 … LANE_BUCKETS − 1: the same 64 as the lanes') lands in shard bucket mod shards.
 */
export const DEFAULT_ORDERED_SHARDS = 4;

/** Queues mode: the delay in whole seconds is spelt in this many bits in the routing key (the wire contract). */
export const DELAY_BITS = 22;

/** The longest delay the levels hold: 2^22 − 1 s (about 48.5 days). */
export const MAX_LEVEL_DELAY_MS = (2 ** DELAY_BITS - 1) * 1_000;
