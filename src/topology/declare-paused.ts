import { DEAD_QUEUE_DELIVERY_LIMIT, queue, queueArguments, type Declaration } from './declare-list.js';
import type { TopologyNames } from './topology-names.js';

/** How long a held callback waits in P.paused before it is checked again: at most this long after a resume, it is back in its lane. */
export const HOLD_RECHECK_MS = 10_000;

/**
 * Holding for paused targets. P.paused keeps each held callback for HOLD_RECHECK_MS, then
 * dead-letters it (through the default exchange, by queue name: no binding to miss) into
 * P.paused.check. That queue has a single active consumer across the fleet, which sends each one
 * back to P.paused while its origin is paused and into its lane once resumed, one channel in queue
 * order, so held callbacks keep their order. RabbitMQ cannot pick one target's messages out of a
 * queue, hence the circulation: https://www.rabbitmq.com/docs/ttl#per-queue-message-ttl and
 * https://www.rabbitmq.com/docs/consumers#single-active-consumer
 *
 * P.paused is never consumed: its messages only expire, so no delivery limit can apply to it.
 * P.paused.check is consumed, and a held callback passes through it every HOLD_RECHECK_MS for as long
 * as its origin is paused. A move that fails goes back with a count of ours (settle/send-back.ts),
 * never by requeue; but a channel that dies holding it (HELD_PREFETCH at a time) returns it, and that
 * counts toward a quorum queue's delivery limit, which RabbitMQ 4 sets to 20 when none is given,
 * dropping the message past it without a dead-letter target. So P.paused.check states a limit as
 * unreachable as P.dead's and dead-letters into P.dead: a held callback is never dropped.
 * https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling
 */
export const pausedQueues = (names: TopologyNames, type: 'quorum' | 'classic'): Declaration[] => [
  queue(
    names.pausedQueue,
    queueArguments({ type, messageTtlMs: HOLD_RECHECK_MS, deadLetter: { exchange: '', routingKey: names.pausedCheckQueue } }),
  ),
  queue(names.pausedCheckQueue, {
    ...queueArguments({ type, deadLetter: { exchange: '', routingKey: names.deadQueue }, deliveryLimit: DEAD_QUEUE_DELIVERY_LIMIT }),
    'x-single-active-consumer': true,
  }),
];
