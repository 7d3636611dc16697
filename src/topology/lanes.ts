import { LANE_BUCKETS } from '../formats/limits.js';

/**
 * Work lanes: P.work is split into LANES queues so that one target's backlog holds up only the
 * targets that share its lane. RabbitMQ keeps FIFO order per queue only, so a single work queue
 * makes every target wait behind the deepest backlog ahead of it; lanes also spread the queues'
 * leaders over a cluster's nodes.
 *
 * The wire contract: a producer may publish with routing key `deliver.<bucket>`, where bucket is
 * FNV-1a (32-bit) of the URL's origin (e.g. `https://example.com:8443`, as WHATWG URL serialises
 * it) modulo 64. Bucket b lands in lane b mod LANES. A message published with plain `deliver` lands
 * in lane 0 (P.work) and still works; its retries go to its own lane, because workers always route
 * by bucket.
 */
export { LANE_BUCKETS, DEFAULT_LANES } from '../formats/limits.js';

/** The bucket of a target origin: FNV-1a 32 over its UTF-8 bytes, modulo LANE_BUCKETS. */
export function laneBucket(origin: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(origin, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % LANE_BUCKETS;
}

/** The routing key that carries a bucket to its lane on exchange P. */
export const laneRoutingKey = (bucket: number): string => `deliver.${bucket}`;

/** The lane bucket `bucket` lands in when the topology has `lanes` lanes. */
export const laneOf = (bucket: number, lanes: number): number => bucket % lanes;
