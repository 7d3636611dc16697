import type { Channel } from 'amqplib';
import type { DelayMode } from './delay-mode.js';
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
 * Exchange P, work queue P.work bound with `deliver`, slow lane P.slow (filled by workers only) and
 * dead-letter queue P.dead. Both consumed queues dead-letter into P.dead, so a message that keeps crashing workers is parked once it passes the
 * delivery limit: https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling
 */
export async function declareDeliveryPath(channel: Channel, names: TopologyNames, options: DeliveryPathOptions): Promise<void> {
  // P.dead is read by requeueing (dlq list, the management UI's Get messages). RabbitMQ 4 gives every
  // quorum queue a default delivery limit of 20 and, without a dead-letter target, drops a message
  // past it; an explicit, practically unreachable limit keeps parked callbacks however often they are
  // looked at (and keeps their position on 3.x): https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling
  await channel.assertQueue(names.deadQueue, { durable: true, arguments: queueArguments({ type: options.queueType, deliveryLimit: DEAD_QUEUE_DELIVERY_LIMIT }) });
  const consumed = queueArguments({
    type: options.queueType,
    deadLetter: { exchange: '', routingKey: names.deadQueue },
    deliveryLimit: options.deliveryLimit,
  });
  await channel.assertQueue(names.workQueue, { durable: true, arguments: consumed });
  await channel.assertQueue(names.slowQueue, { durable: true, arguments: consumed });
  if (options.mode === 'plugin') {
    // The plugin's exchange routes like its x-delayed-type once a message's x-delay has elapsed.
    await channel.assertExchange(names.exchange, 'x-delayed-message', { durable: true, arguments: { 'x-delayed-type': 'direct' } });
    // Delayed messages land in P.due, declared on a channel of its own: see declare-due-queue.ts.
  } else {
    await channel.assertExchange(names.exchange, 'direct', { durable: true });
  }
  await channel.bindQueue(names.workQueue, names.exchange, names.routingKey);
  await channel.assertExchange(names.eventsExchange, 'topic', { durable: true });
}
