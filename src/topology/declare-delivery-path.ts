import { binding, exchange, queue, type Declaration } from './declare-list.js';
import type { DelayMode } from './delay-mode.js';
import { LANE_BUCKETS, laneOf, laneRoutingKey } from './lanes.js';
import { queueArguments } from './queue-arguments.js';
import type { TopologyNames } from './topology-names.js';

/** Deliveries of a parked callback before the broker would drop it: never, in practice. */
export const DEAD_QUEUE_DELIVERY_LIMIT = 1_000_000;

export interface DeliveryPathOptions {
  mode: DelayMode;
  queueType: 'quorum' | 'classic';
  deliveryLimit: number;
}

/**
 * Exchange P; the work lanes P.work, P.work.1 … (lanes.ts), bound with `deliver` (lane 0) and
 * `deliver.<bucket>` (bucket mod lanes); the slow lane P.slow of earlier versions (drained, no longer filled) and the dead-letter
 * queue P.dead. Every consumed queue dead-letters into P.dead, so a message that keeps crashing
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
        // Delayed messages land in P.due, declared on a channel of its own: see declare-due-queue.ts.
        exchange(names.exchange, 'x-delayed-message', { 'x-delayed-type': 'direct' })
      : exchange(names.exchange, 'direct'),
    binding(names.workQueue, names.exchange, names.routingKey),
    ...Array.from({ length: LANE_BUCKETS }, (_, bucket) => binding(names.workQueues[laneOf(bucket, lanes)] as string, names.exchange, laneRoutingKey(bucket))),
    exchange(names.eventsExchange, 'topic'),
  ];
}
