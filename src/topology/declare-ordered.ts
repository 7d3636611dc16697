import { binding, queue, type Declaration } from './declare-list.js';
import { LANE_BUCKETS, orderedRoutingKey, orderedShard, type TopologyNames } from './topology-names.js';

const LOG_MAX_AGE_DAYS = 30;

/**
 * How long a shard's log keeps what the workers wrote to it: as long as P.control keeps a marker
 * (CONTROL_MAX_AGE), longer than the retry schedule of any callback the log is about. Fixed, because
 * every worker declares the streams and must declare them alike.
 */
export const ORDERED_LOG_MAX_AGE = `${LOG_MAX_AGE_DAYS}D`;

/**
 * After how long a shard's owner writes again what its log still needs (consumer/log-renewal.ts): a
 * key held or stopped longer than the log keeps records. A quarter of the age leaves three more
 * renewals' time before retention, for an owner that is down or a broker that refuses appends.
 */
export const ORDERED_LOG_RENEW_AFTER_MS = (LOG_MAX_AGE_DAYS / 4) * 24 * 3_600_000;

/**
 * A log's segment files: small, because retention drops whole segments only (the default 500 MB
 * would keep a quiet shard's records long past ORDERED_LOG_MAX_AGE):
 * https://www.rabbitmq.com/docs/streams#retention
 */
export const ORDERED_LOG_SEGMENT_BYTES = 8_000_000;

/**
 * Ordered delivery (topology-names.ts, orderBucket): the shards P.ordered.0 …, each bound on exchange P
 * with `ordered.<bucket>` for its buckets (bucket mod shards), and one log stream per shard,
 * P.ordered.log.0 …. A shard is consumed like a lane, so it takes the lanes' arguments (`consumed`:
 * their dead-letter target P.dead and delivery limit, so a message that keeps crashing workers is
 * parked), and it has one consumer at a time across the fleet (single active consumer): only one
 * worker takes a shard's messages, in queue order, and another takes over where it stopped.
 * https://www.rabbitmq.com/docs/consumers#single-active-consumer
 *
 * Declared after exchange P (deliveryPath), since its bindings are on P.
 */
export function orderedShards(names: TopologyNames, consumed: Record<string, unknown>): Declaration[] {
  const shards = names.orderedQueues.length;
  return [
    ...names.orderedQueues.map((name) => queue(name, { ...consumed, 'x-single-active-consumer': true })),
    ...Array.from({ length: LANE_BUCKETS }, (_, bucket) =>
      binding(names.orderedQueues[orderedShard(bucket, shards)] as string, names.exchange, orderedRoutingKey(bucket)),
    ),
    ...names.orderedLogs.map((name) =>
      queue(name, {
        'x-queue-type': 'stream',
        'x-max-age': ORDERED_LOG_MAX_AGE,
        'x-stream-max-segment-size-bytes': ORDERED_LOG_SEGMENT_BYTES,
      }),
    ),
  ];
}
