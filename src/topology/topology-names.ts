/*
 * Names and routes, all derived from the one prefix P: every exchange and queue name, the lane a
 * target's callbacks travel in and the shard an ordered callback's key travels in (their buckets: the
 * wire contract), and the exchange and routing key a callback is published with for a delay in either
 * delay mode.
 */
import { fnv1a32 } from '../formats/fnv1a.js';
import { DEFAULT_LANES, DEFAULT_ORDERED_SHARDS, LANE_BUCKETS } from '../formats/limits.js';
import { HEADER } from '../message/headers.js';
import { DELAY_BITS, DELAY_LEVELS, DIGIT_BITS, DIGITS, delayRoutingKey, levelDelaySeconds, type DelayMode } from './delay-levels.js';

/** Every exchange and queue name, derived from the one prefix P. */
export interface TopologyNames {
  /** Exchange producers publish to (routing key `deliver`). x-delayed-message in plugin mode, else direct. */
  exchange: string;
  routingKey: 'deliver';
  /** Lane 0 of the work queues: where plain `deliver` lands. */
  workQueue: string;
  /** Every work lane, P.work first (P.work, P.work.1, …, P.work.<LANES − 1>). */
  workQueues: string[];
  /** A topic exchange that earlier builds declared in queues mode; only torn down now. */
  lanesExchange: string;
  /**
   * Plugin mode: the classic queue the plugin hands delayed messages to (routing key `due`); workers
   * move them on into P.work. See declare-topology.ts for why it is not P.work itself.
   */
  dueQueue: string;
  dueRoutingKey: 'due';
  /**
   * The ordered shards P.ordered.0 … P.ordered.<ORDERED_SHARDS − 1>: callbacks with an orderKey, each
   * key in one shard (orderedShard), consumed by one worker at a time (single active consumer).
   */
  orderedQueues: string[];
  /** One stream per shard, P.ordered.log.0 …: the shard's log, written and read by the workers. */
  orderedLogs: string[];
  /** Overflow queue: a busy target's waiting callbacks move here (ISOLATION), so the callbacks behind them in its lane go on; every worker consumes it. */
  slowQueue: string;
  /** Topic exchange of outcome events (`delivered`, `retry-scheduled`, `dead`). */
  eventsExchange: string;
  /** HISTORY=on: the stream of every outcome event, bound to P.events (declare-history.ts; read by src/history/). */
  historyQueue: string;
  /** The control stream of cancel and pause markers every worker reads (declare-control.ts; read and written by src/control/). */
  controlQueue: string;
  /**
   * Fanout exchange of the workers' heartbeats (src/control/fleet-presence.ts): each worker binds an
   * exclusive queue of its own, so every worker knows the live ones. Transient: declared by the workers.
   */
  presenceExchange: string;
  /** Held callbacks of paused targets, and the queue they are checked in (src/topology/declare-paused.ts). */
  pausedQueue: string;
  pausedCheckQueue: string;
  /** Dead-letter queue operators inspect and replay from. */
  deadQueue: string;
  /** Queues mode: entry exchange of the delay levels (topic; routing key = the delay's bits). */
  delayExchange: string;
  /**
   * Queues mode: the queue of the level whose messages wait `seconds` (delay-levels.ts), `P.delay.up.240s`:
   * "up" for the order the levels are visited in, lowest digit first. The name is new with that order,
   * because a queue's dead-letter exchange cannot change (the levels of the version before were P.delay.240s).
   */
  delayLevel: (seconds: number) => string;
  /** Queues mode: every level queue, highest first. */
  delayLevels: string[];
  /**
   * Queues mode: the exchange the levels of digit `position` dead-letter into, routing by the digits
   * above it: `P.delay.up.above.16s` for position 1 (the 16 s digit; `above.1s` for position 0).
   */
  delayLevelExchange: (position: number) => string;
  /**
   * Queues mode of earlier versions (level-layouts.ts), never declared now: what they still hold
   * drains on its own, and the teardown deletes them. The first, one level per bit: queues P.delay.21 …
   * P.delay.00 and exchanges P.delay.20 … P.delay.00.
   */
  binaryLevels: { queues: string[]; exchanges: string[] };
  /**
   * The second, radix 16 visited highest digit first: queues P.delay.<seconds>s (highest first, like delayLevels)
   * and the exchanges P.delay.below.<16^n>s the levels of digit n dead-lettered into (position 0 first).
   */
  highFirstLevels: { queue: (seconds: number) => string; exchange: (position: number) => string; queues: string[]; exchanges: string[] };
}

export function topologyNames(prefix: string, lanes = DEFAULT_LANES, orderedShards = DEFAULT_ORDERED_SHARDS): TopologyNames {
  const delayLevel = (seconds: number): string => `${prefix}.delay.up.${seconds}s`;
  const digitUnit = (position: number): number => 2 ** (position * DIGIT_BITS);
  const highFirstLevel = (seconds: number): string => `${prefix}.delay.${seconds}s`;
  const highFirstExchange = (position: number): string => `${prefix}.delay.below.${digitUnit(position)}s`;
  const binaryLevel = (bit: number): string => `${prefix}.delay.${String(bit).padStart(2, '0')}`;
  const bits = Array.from({ length: DELAY_BITS }, (_, i) => DELAY_BITS - 1 - i);
  const positions = Array.from({ length: DIGITS }, (_, position) => position);
  return {
    exchange: prefix,
    routingKey: 'deliver',
    workQueue: `${prefix}.work`,
    workQueues: Array.from({ length: lanes }, (_, lane) => (lane === 0 ? `${prefix}.work` : `${prefix}.work.${lane}`)),
    lanesExchange: `${prefix}.lanes`,
    orderedQueues: Array.from({ length: orderedShards }, (_, shard) => `${prefix}.ordered.${shard}`),
    orderedLogs: Array.from({ length: orderedShards }, (_, shard) => `${prefix}.ordered.log.${shard}`),
    slowQueue: `${prefix}.slow`,
    dueQueue: `${prefix}.due`,
    dueRoutingKey: 'due',
    deadQueue: `${prefix}.dead`,
    eventsExchange: `${prefix}.events`,
    historyQueue: `${prefix}.history`,
    controlQueue: `${prefix}.control`,
    presenceExchange: `${prefix}.presence`,
    pausedQueue: `${prefix}.paused`,
    pausedCheckQueue: `${prefix}.paused.check`,
    delayExchange: `${prefix}.delay`,
    delayLevel,
    delayLevels: DELAY_LEVELS.map((level) => delayLevel(level.seconds)),
    delayLevelExchange: (position) => `${prefix}.delay.up.above.${digitUnit(position)}s`,
    binaryLevels: { queues: bits.map(binaryLevel), exchanges: bits.slice(1).map(binaryLevel) },
    highFirstLevels: {
      queue: highFirstLevel,
      exchange: highFirstExchange,
      queues: DELAY_LEVELS.map((level) => highFirstLevel(level.seconds)),
      exchanges: positions.map(highFirstExchange),
    },
  };
}

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
export { LANE_BUCKETS, DEFAULT_LANES, DEFAULT_ORDERED_SHARDS } from '../formats/limits.js';

/** The bucket of a target origin: FNV-1a 32 over its UTF-8 bytes, modulo LANE_BUCKETS. */
export const laneBucket = (origin: string): number => fnv1a32(origin) % LANE_BUCKETS;

/** The routing key that carries a bucket to its lane on exchange P. */
export const laneRoutingKey = (bucket: number): string => `deliver.${bucket}`;

/** The lane bucket `bucket` lands in when the topology has `lanes` lanes. */
export const laneOf = (bucket: number, lanes: number): number => bucket % lanes;

/**
 * Ordered delivery: callbacks with the same orderKey are delivered in the order the broker accepted
 * them. RabbitMQ keeps order within one queue only, so every callback of a key must travel through
 * the same queue, and that queue must have one consumer at a time: the key's shard, a single active
 * consumer queue.
 *
 * The wire contract: a producer publishes an ordered callback to exchange P with routing key
 * `ordered.<bucket>`, where bucket is FNV-1a (32-bit) of the key's UTF-8 bytes modulo 64 (the same hash
 * and the same 64 buckets as the lanes'). Bucket b lands in shard b mod ORDERED_SHARDS. It is never
 * published with a first-attempt delay: a delayed callback would let those of its key published
 * after it overtake it.
 */
export const orderBucket = (orderKey: string): number => fnv1a32(orderKey) % LANE_BUCKETS;

/** The routing key that carries an ordered bucket to its shard on exchange P. */
export const orderedRoutingKey = (bucket: number): string => `ordered.${bucket}`;

/** The shard ordered bucket `bucket` lands in when the topology has `shards` shards. */
export const orderedShard = (bucket: number, shards: number): number => bucket % shards;

/**
 * An ordered bucket as the last word of a delayed message's routing key (`due.o<bucket>` in plugin
 * mode, the delay levels' key in queues mode): apart from a lane bucket's plain number, so the same
 * delay exchanges and P.due carry both, and each comes out where it belongs.
 */
export const orderedBucketWord = (bucket: number): string => `o${bucket}`;

/**
 * Plugin mode: where a message that fell due in P.due goes on to on exchange P, by the routing key
 * it was delayed with: `due.<bucket>` to its lane as `deliver.<bucket>`, `due.o<bucket>` to its shard
 * as `ordered.<bucket>`, plain `due` as `deliver` (lane 0). Anything else keeps its last word after
 * `deliver.`, as before: the copy is mandatory, so a word no lane is bound to comes back and is parked.
 */
export function dueDestination(names: TopologyNames, dueRoutingKey: string): string {
  const word = dueRoutingKey.split('.')[1];
  if (word === undefined) return names.routingKey;
  const ordered = /^o(\d+)$/.exec(word);
  return ordered ? orderedRoutingKey(Number(ordered[1])) : `${names.routingKey}.${word}`;
}

/** The plugin keeps x-delay in an unsigned 32-bit integer of milliseconds. */
export const MAX_PLUGIN_DELAY_MS = 2 ** 32 - 1;

export interface Route {
  exchange: string;
  routingKey: string;
  /** Headers the route needs (x-delay in plugin mode). */
  headers: Record<string, unknown>;
}

/**
 * Where to publish a message of lane bucket `bucket` so that it reaches its work lane after `delayMs`,
 * published at `nowMs`. In queues mode a delayed message carries its due time (HEADER.dueAt): the
 * levels count whole seconds and let it out early, and the worker holds it for the rest.
 */
export function deliveryRoute(names: TopologyNames, mode: DelayMode, delayMs: number, bucket: number, nowMs: number): Route {
  return delayedRoute(names, mode, delayMs, nowMs, laneRoutingKey(bucket), String(bucket));
}

/**
 * Where to publish an ordered message of bucket `bucket` so that it reaches its shard after `delayMs`
 * (a retry), published at `nowMs`; as deliveryRoute, with the bucket's word `o<bucket>`: P.due's
 * mover sends `due.o<bucket>` on as `ordered.<bucket>`, and the last delay exchange binds the word to
 * the shard. In queues mode the message carries its due time, and the worker holds it until then.
 */
export function orderedRoute(names: TopologyNames, mode: DelayMode, delayMs: number, bucket: number, nowMs: number): Route {
  return delayedRoute(names, mode, delayMs, nowMs, orderedRoutingKey(bucket), orderedBucketWord(bucket));
}

/** `routingKey` on P at once; after a delay, through P.due or the levels with `word` as the key's last word. */
function delayedRoute(names: TopologyNames, mode: DelayMode, delayMs: number, nowMs: number, routingKey: string, word: string): Route {
  const now: Route = { exchange: names.exchange, routingKey, headers: {} };
  if (mode === 'plugin') {
    const ms = Math.min(Math.round(delayMs), MAX_PLUGIN_DELAY_MS);
    // Delayed messages land in P.due, a classic queue: see declare-topology.ts.
    return ms > 0 ? { ...now, routingKey: `${names.dueRoutingKey}.${word}`, headers: { 'x-delay': ms } } : now;
  }
  if (!(delayMs >= 1)) return now;
  const headers = { [HEADER.dueAt]: Math.round(nowMs + delayMs) };
  const seconds = levelDelaySeconds(delayMs);
  // Under a level's worth: straight to the lane (or shard), where the worker holds it until due.
  if (seconds === 0) return { ...now, headers };
  // The bucket rides as the key's last word; the last delay exchange binds it to its lane (or shard).
  return { exchange: names.delayExchange, routingKey: `${delayRoutingKey(seconds)}.${word}`, headers };
}
