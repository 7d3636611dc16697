import { checkQueues } from '../amqp/check-queues.js';
import { connectFirst } from '../amqp/connect.js';
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
 * Depth and consumer count of every watched queue that exists (checkQueues: passive declares, no
 * management plugin needed). A missing queue (the due queue in queues mode, the levels in plugin
 * mode) is left out.
 */
export async function queueDepths(urls: string[], names: TopologyNames): Promise<QueueDepth[]> {
  const { connection } = await connectFirst(urls);
  try {
    const watched = watchedQueues(names);
    const counts = await checkQueues(connection, watched.map(({ queue }) => queue));
    return watched.flatMap(({ queue, kind }, i) => {
      const found = counts[i];
      return found ? [{ queue, kind, messages: found.messageCount, consumers: found.consumerCount }] : [];
    });
  } finally {
    await connection.close().catch(() => {});
  }
}
