/*
 * What the relay declares: the delivery path (exchange P, the work lanes, P.slow, P.dead, the ordered
 * shards and their logs), the delay
 * path of the mode in use (the radix-16 level queues in queues mode, P.due in plugin mode), and the
 * streams and queues that history/ and control/ read (declare-history.ts, declare-control.ts,
 * declare-paused.ts). One list, declared on every connect.
 */
import type { Channel } from 'amqplib';
import { openChannel } from '../amqp/connect.js';
import { withTimeout } from '../util/with-timeout.js';
import { controlStream } from './declare-control.js';
import { pausedQueues } from './declare-paused.js';
import { RelayError } from '../errors.js';
import { historyStream } from './declare-history.js';
import { orderedShards } from './declare-ordered.js';
import {
  applyDeclarations,
  binding,
  DEAD_QUEUE_DELIVERY_LIMIT,
  exchange,
  queue,
  queueArguments,
  type BrokerFeatures,
  type Declaration,
  type OpenChannel,
} from './declare-list.js';
import { DELAY_LEVELS, DIGITS, levelTtlMs, type DelayMode } from './delay-levels.js';
import { lowestFirst, type LevelLayout } from './level-layouts.js';
import { LANE_BUCKETS, laneOf, laneRoutingKey, orderedBucketWord, orderedShard, type TopologyNames } from './topology-names.js';

export interface TopologyOptions {
  names: TopologyNames;
  mode: DelayMode;
  queueType: 'quorum' | 'classic';
  deliveryLimit: number;
  broker: BrokerFeatures;
  /** HISTORY=on: the stream P.history and its retention (HISTORY_MAX_AGE). */
  history?: { maxAge: string } | undefined;
}

/**
 * The whole topology of one prefix as an ordered list: each part's exchanges, queues and bindings,
 * a queue before its bindings. One entry per part; the teardown (teardown.ts) deletes whatever this
 * list can hold. Quorum delay queues need message TTL with at-least-once dead-lettering (3.10+);
 * older brokers get classic ones. Plugin mode's P.due is declared apart (dueQueue, below).
 */
export function topologyDeclarations(options: TopologyOptions): Declaration[] {
  const { names, mode, queueType, deliveryLimit, broker } = options;
  // Queues that dead-letter expired messages: quorum only with at-least-once dead-lettering.
  const expiring = queueType === 'quorum' && broker.quorumDeadLettering ? 'quorum' : 'classic';
  return [
    ...deliveryPath(names, { mode, queueType, deliveryLimit }),
    ...(mode === 'queues' ? delayLevels(names, expiring) : []),
    ...(options.history ? historyStream(names, options.history.maxAge) : []),
    ...controlStream(names),
    ...pausedQueues(names, expiring),
  ];
}

/**
 * Declares everything, idempotently; run on every (re)connect as a channel setup. `openChannel`
 * (another channel on the same connection) lets the bindings go in parallel (see applyDeclarations).
 */
export async function declareTopology(channel: Channel, options: TopologyOptions, openChannel?: OpenChannel): Promise<void> {
  try {
    await applyDeclarations(channel, topologyDeclarations(options), openChannel);
  } catch (error) {
    throw new RelayError(
      'CR_ERR_TOPOLOGY',
      `could not declare the topology of prefix "${options.names.exchange}" (${(error as Error).message}). ` +
        'If it already exists with other settings (DELAY_MODE, QUEUE_TYPE, DELIVERY_LIMIT), use another TOPOLOGY_PREFIX or delete the old one.',
      { cause: error },
    );
  }
}

export interface DeliveryPathOptions {
  mode: DelayMode;
  queueType: 'quorum' | 'classic';
  deliveryLimit: number;
}

/**
 * Exchange P; the work lanes P.work, P.work.1 … (topology-names.ts), bound with `deliver` (lane 0) and
 * `deliver.<bucket>` (bucket mod lanes); the overflow queue P.slow (a busy target's waiting callbacks,
 * moved there by the worker so the others in its lane go on) and the dead-letter queue P.dead; the
 * ordered shards and their logs (declare-ordered.ts). Every consumed queue dead-letters into P.dead, so a message that keeps crashing
 * workers is parked once it passes the delivery limit:
 * https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling
 */
export function deliveryPath(names: TopologyNames, options: DeliveryPathOptions): Declaration[] {
  const consumed = queueArguments({
    type: options.queueType,
    deadLetter: { exchange: '', routingKey: names.deadQueue },
    deliveryLimit: options.deliveryLimit,
  });
  const lanes = names.workQueues.length;
  return [
    // P.dead is read by requeueing (dlq list, the management UI's Get messages). RabbitMQ 4 gives every
    // quorum queue a default delivery limit of 20 and, without a dead-letter target, drops a message
    // past it; an explicit, practically unreachable limit keeps parked callbacks however often they are
    // looked at (and keeps their position on 3.x): https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling
    queue(names.deadQueue, queueArguments({ type: options.queueType, deliveryLimit: DEAD_QUEUE_DELIVERY_LIMIT })),
    ...[...names.workQueues, names.slowQueue].map((name) => queue(name, consumed)),
    options.mode === 'plugin'
      ? // The plugin's exchange routes like its x-delayed-type once a message's x-delay has elapsed.
        // Delayed messages land in P.due, declared on a channel of its own: see dueQueue below.
        exchange(names.exchange, 'x-delayed-message', { 'x-delayed-type': 'direct' })
      : exchange(names.exchange, 'direct'),
    binding(names.workQueue, names.exchange, names.routingKey),
    ...Array.from({ length: LANE_BUCKETS }, (_, bucket) =>
      binding(names.workQueues[laneOf(bucket, lanes)] as string, names.exchange, laneRoutingKey(bucket)),
    ),
    ...orderedShards(names, consumed),
    exchange(names.eventsExchange, 'topic'),
  ];
}

/**
 * Queues mode (see delay-levels.ts): the 78 level queues P.delay.up.3145728s … P.delay.up.1s, the entry
 * exchange P.delay, and one exchange per digit position, P.delay.up.above.<16^n>s, that the levels of
 * digit n dead-letter their expired messages into. Each exchange binds the levels still ahead
 * directly, and, for a key with none ahead, the lane of its bucket (the key's last word) directly
 * too: a queue, never an exchange, is the target of every binding, so the last hop lands in the
 * message's own lane, and the lanes share the delayed messages as they share fresh ones; an ordered
 * message's last word `o<bucket>` is bound to its shard the same way (orderedRoute). Quorum
 * level queues use at-least-once dead-lettering so a message is never dropped between levels:
 * https://www.rabbitmq.com/docs/quorum-queues#dead-lettering
 *
 * `layout` (level-layouts.ts) is today's unless an upgrade test declares an earlier version's levels.
 */
export function delayLevels(
  names: TopologyNames,
  queueType: 'quorum' | 'classic',
  layout: LevelLayout = lowestFirst(names),
): Declaration[] {
  const laneQueue = (bucket: number): string => names.workQueues[laneOf(bucket, names.workQueues.length)] as string;
  const shardQueue = (bucket: number): string => names.orderedQueues[orderedShard(bucket, names.orderedQueues.length)] as string;
  const declarations: Declaration[] = [];
  for (const level of DELAY_LEVELS) {
    const deadLetter = { exchange: layout.exchange(level.position) };
    declarations.push(
      queue(layout.queue(level.seconds), queueArguments({ type: queueType, messageTtlMs: levelTtlMs(level.seconds), deadLetter })),
    );
  }
  const bindLevels = (name: string, from: number | 'entry'): void => {
    declarations.push(exchange(name, 'topic'));
    for (const { bindingKey, to } of layout.routes(from)) {
      if (typeof to === 'number') declarations.push(binding(layout.queue(to), name, bindingKey));
      // A key without a bucket (a producer that left it out) still ends in a lane: P.work, as plain `deliver` does.
      else if (to === 'no-bucket') declarations.push(binding(names.workQueue, name, bindingKey));
      else {
        for (let bucket = 0; bucket < LANE_BUCKETS; bucket += 1)
          declarations.push(binding(laneQueue(bucket), name, bindingKey.replace(/\*$/, String(bucket))));
        // Ordered buckets (`o<bucket>`) to their shards; only for hex keys (DIGITS words and the bucket),
        // the only spelling a relay that knows ordered callbacks publishes.
        if (bindingKey.split('.').length === DIGITS + 1)
          for (let bucket = 0; bucket < LANE_BUCKETS; bucket += 1)
            declarations.push(binding(shardQueue(bucket), name, bindingKey.replace(/\*$/, orderedBucketWord(bucket))));
      }
    }
  };
  for (let position = 0; position < DIGITS; position += 1) bindLevels(layout.exchange(position), position);
  bindLevels(names.delayExchange, 'entry');
  return declarations;
}

/**
 * Plugin mode: P.due, where the plugin delivers a message once its delay has ended (routing key
 * `due.<bucket>`, `due.o<bucket>` for an ordered one, or `due`).
 *
 * The plugin hands such a message to its queues without a confirm, and a quorum queue whose leader is
 * not up drops it. At every broker start the plugin fires all overdue messages at once, before the
 * quorum queues have elected leaders, so a quorum P.work lost every retry that fell due during a
 * restart. Classic queues are up before plugins start, so P.due is classic, and workers move each
 * message on into P.work with a confirmed publish (consumer/move-due.ts). Plugin source:
 * rabbit_delayed_message:route/3 (rabbit_amqqueue:deliver, no confirm).
 *
 * A classic queue lives on one node. While that node is down its declaration fails and closes the
 * channel, so callers declare it on a channel of its own: the rest of the relay keeps working.
 */
export const dueQueue = (names: TopologyNames): Declaration[] => [
  queue(names.dueQueue, queueArguments({ type: 'classic' })),
  binding(names.dueQueue, names.exchange, names.dueRoutingKey),
  // Delays keep their lane bucket: `due.<bucket>`, moved on as `deliver.<bucket>`.
  ...Array.from({ length: LANE_BUCKETS }, (_, bucket) => binding(names.dueQueue, names.exchange, `${names.dueRoutingKey}.${bucket}`)),
  // Ordered ones keep theirs too: `due.o<bucket>`, moved on as `ordered.<bucket>` into the shard.
  ...Array.from({ length: LANE_BUCKETS }, (_, bucket) =>
    binding(names.dueQueue, names.exchange, `${names.dueRoutingKey}.${orderedBucketWord(bucket)}`),
  ),
];

export const declareDueQueue = (channel: Channel, names: TopologyNames): Promise<void> => applyDeclarations(channel, dueQueue(names));

/**
 * Declares P.due on a short-lived channel of `connection`, best effort: false while its node is down
 * (the workers' movers keep trying), or when it took longer than `withinMs` (a connection being cut can
 * leave a channel open unanswered). Publishers and `npm run topology` do this too, so that delayed
 * callbacks published before any worker ran find P.due when they fall due.
 */
export async function declareDueQueueAside(
  connection: { createChannel(): Promise<Channel> },
  names: TopologyNames,
  withinMs?: number,
): Promise<boolean> {
  const declared = (async () => {
    const channel = await openChannel(connection);
    await declareDueQueue(channel, names);
    await channel.close();
    return true;
  })().catch(() => false);
  try {
    return await (withinMs === undefined ? declared : withTimeout(declared, withinMs, () => new Error('gave up')));
  } catch {
    return false;
  }
}
