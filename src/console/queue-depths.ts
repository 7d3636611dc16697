import type { Channel } from 'amqplib';
import { isNotFound } from '../amqp/broker-errors.js';
import { connectFirst, openChannel } from '../amqp/connect.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** One queue as the overview shows it. */
export interface QueueDepth {
  queue: string;
  kind: 'lane' | 'delay level' | 'due' | 'dead' | 'paused';
  /** Ready messages (the broker's count; unacked ones are not in it). */
  messages: number;
  /** Consumers: on a lane, the workers consuming it. */
  consumers: number;
}

/** The queues of a topology the overview looks at, in the order it shows them. */
export function watchedQueues(names: TopologyNames): Array<Pick<QueueDepth, 'queue' | 'kind'>> {
  return [
    ...names.workQueues.map((queue) => ({ queue, kind: 'lane' as const })),
    { queue: names.dueQueue, kind: 'due' as const },
    ...names.delayLevels.map((queue) => ({ queue, kind: 'delay level' as const })),
    { queue: names.deadQueue, kind: 'dead' as const },
    { queue: names.pausedQueue, kind: 'paused' as const },
  ];
}

/**
 * Depth and consumer count of every watched queue that exists, by passive declare
 * (https://www.rabbitmq.com/docs/queues#passive-declaration): it works without the management
 * plugin, on every broker version. A missing queue (the due queue in queues mode, the levels in
 * plugin mode) is a 404 that closes the channel it was asked on, so another is opened for the rest.
 */
export async function queueDepths(urls: string[], names: TopologyNames): Promise<QueueDepth[]> {
  const { connection } = await connectFirst(urls);
  try {
    let channel: Channel = await openChannel(connection);
    const depths: QueueDepth[] = [];
    for (const { queue, kind } of watchedQueues(names)) {
      try {
        const { messageCount, consumerCount } = await channel.checkQueue(queue);
        depths.push({ queue, kind, messages: messageCount, consumers: consumerCount });
      } catch (error) {
        if (!isNotFound(error)) throw error;
        channel = await openChannel(connection);
      }
    }
    return depths;
  } finally {
    await connection.close().catch(() => {});
  }
}
