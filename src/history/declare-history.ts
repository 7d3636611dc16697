import type { Channel } from 'amqplib';
import type { TopologyNames } from '../topology/topology-names.js';

/**
 * HISTORY=on: the stream P.history, bound to P.events with `#`, so every outcome event is kept for
 * `maxAge` (a stream's `x-max-age`, e.g. 7D) and can be read again from any point in time. A stream
 * is an append-only log: reading it does not remove anything, and many readers can read it at once.
 * Retention drops whole segments once all their events are older than `maxAge`:
 * https://www.rabbitmq.com/docs/streams#retention
 */
export async function declareHistory(channel: Channel, names: TopologyNames, maxAge: string): Promise<void> {
  await channel.assertExchange(names.eventsExchange, 'topic', { durable: true });
  await channel.assertQueue(names.historyQueue, { durable: true, arguments: { 'x-queue-type': 'stream', 'x-max-age': maxAge } });
  await channel.bindQueue(names.historyQueue, names.eventsExchange, '#');
}
