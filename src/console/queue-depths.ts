import type { Channel } from 'amqplib';
import { checkQueues } from '../amqp/check-queues.js';
import { connectFirst } from '../amqp/connect.js';
import { earlierLevels } from '../topology/level-layouts.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** One queue as the overview shows it. */
export interface QueueDepth {
  queue: string;
  /** `earlier delay level`: a level of an earlier version, draining after an upgrade (docs/delay-modes.md). */
  kind: 'lane' | 'delay level' | 'earlier delay level' | 'due' | 'dead' | 'paused';
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

/** Depth and consumer count of every watched queue that exists, on a connection of the broker (queueDepthsOn). */
export async function queueDepths(urls: string[], names: TopologyNames): Promise<QueueDepth[]> {
  const { connection } = await connectFirst(urls);
  try {
    return await queueDepthsOn(connection, names);
  } finally {
    await connection.close().catch(() => {});
  }
}

/**
 * Depth and consumer count of every watched queue that exists (checkQueues: passive declares, no
 * management plugin needed), and of the level queues of earlier versions, which an upgrade leaves to
 * drain (docs/delay-modes.md), shown after today's. A missing queue (the due queue in queues mode, the
 * levels in plugin mode) is left out. Each missing queue costs a channel, so an earlier version's
 * levels are looked at only where its lowest level, which every prefix of that version has, exists
 * (as retire-earlier-levels.ts does): a prefix without them costs one passive declare per version.
 */
export async function queueDepthsOn(connection: { createChannel(): Promise<Channel> }, names: TopologyNames): Promise<QueueDepth[]> {
  const watched = watchedQueues(names);
  const versions = earlierLevels(names);
  const counts = await checkQueues(connection, [...watched.map(({ queue }) => queue), ...versions.map(({ probe }) => probe)]);
  const earlier = versions
    .filter((_, i) => counts[watched.length + i])
    .flatMap(({ queues }) => queues.map((queue) => ({ queue, kind: 'earlier delay level' as const })));
  const earlierCounts = earlier.length > 0 ? await checkQueues(connection, earlier.map(({ queue }) => queue)) : [];
  // Shown after today's levels, before P.dead.
  const after = watched.findIndex(({ kind }) => kind === 'dead');
  const queues = [...watched.slice(0, after), ...earlier, ...watched.slice(after)];
  const found = [...counts.slice(0, after), ...earlierCounts, ...counts.slice(after, watched.length)];
  return queues.flatMap(({ queue, kind }, i) => {
    const count = found[i];
    return count ? [{ queue, kind, messages: count.messageCount, consumers: count.consumerCount }] : [];
  });
}
