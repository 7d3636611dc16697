import type { Channel } from 'amqplib';
import { isNotFound } from './broker-errors.js';
import { openChannel } from './connect.js';

/** What a passive declare tells of a queue. */
export interface QueueCounts {
  /** Ready messages (unacked ones are not in it). */
  messageCount: number;
  consumerCount: number;
}

/**
 * Passive-declares each queue in order (https://www.rabbitmq.com/docs/queues#passive-declaration):
 * it works without the management plugin, on every broker version. A missing queue is undefined; its
 * 404 closes the channel it was asked on, so another is opened for the rest.
 */
export async function checkQueues(
  connection: { createChannel(): Promise<Channel> },
  queues: readonly string[],
): Promise<Array<QueueCounts | undefined>> {
  let channel = await openChannel(connection);
  const counts: Array<QueueCounts | undefined> = [];
  try {
    for (const queue of queues) {
      try {
        const { messageCount, consumerCount } = await channel.checkQueue(queue);
        counts.push({ messageCount, consumerCount });
      } catch (error) {
        if (!isNotFound(error)) throw error;
        counts.push(undefined);
        channel = await openChannel(connection);
      }
    }
    return counts;
  } finally {
    await channel.close().catch(() => {});
  }
}
