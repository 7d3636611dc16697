import { randomBytes } from 'node:crypto';
import amqplib from 'amqplib';
import { topologyNames } from '../src/topology/topology-names.js';

export const randomPrefix = (kind: string): string => `${kind}-${randomBytes(4).toString('hex')}`;

/** Deletes every queue and exchange of a prefix, so benchmark runs leave the broker as they found it. */
export async function deleteTopologyAt(url: string, prefix: string): Promise<void> {
  const names = topologyNames(prefix);
  const connection = await amqplib.connect(url);
  const channel = await connection.createChannel();
  for (const queue of [names.workQueue, names.slowQueue, names.deadQueue, names.dueQueue, ...names.delayLevels]) await channel.deleteQueue(queue);
  for (const exchange of [names.exchange, names.eventsExchange, names.delayExchange, ...names.delayLevels]) await channel.deleteExchange(exchange);
  await connection.close();
}
