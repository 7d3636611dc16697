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

/** Level queues a prefix has all of or none of; `probe`, the lowest, tells which. */
interface LevelSet {
  probe: string;
  queues: string[];
  kind: 'delay level' | 'earlier delay level';
}

/**
 * Depth and consumer count of every watched queue that exists (checkQueues: passive declares, no
 * management plugin needed), and of the level queues of earlier versions, which an upgrade leaves to
 * drain (docs/delay-modes.md), shown after today's. A missing queue (the due queue in queues mode, the
 * levels in plugin mode) is left out. Each missing queue costs a channel, so a set of levels, today's
 * or an earlier version's, is looked at only where its lowest level exists (as retire-earlier-levels.ts
 * does): a prefix without the set (today's in plugin mode) costs one passive declare for it on each
 * refresh, not one per level. The probe is asked again with the rest, so a set's counts are of one pass.
 */
export async function queueDepthsOn(connection: { createChannel(): Promise<Channel> }, names: TopologyNames): Promise<QueueDepth[]> {
  const sets: LevelSet[] = [
    { probe: names.delayLevels.at(-1) as string, queues: names.delayLevels, kind: 'delay level' },
    ...earlierLevels(names).map(({ probe, queues }) => ({ probe, queues, kind: 'earlier delay level' as const })),
  ];
  const always = watchedQueues(names).filter(({ kind }) => kind !== 'delay level');
  const counts = await checkQueues(connection, [...always.map(({ queue }) => queue), ...sets.map(({ probe }) => probe)]);
  const levels = sets.filter((_, i) => counts[always.length + i]).flatMap(({ queues, kind }) => queues.map((queue) => ({ queue, kind })));
  const levelCounts =
    levels.length > 0
      ? await checkQueues(
          connection,
          levels.map(({ queue }) => queue),
        )
      : [];
  // Where watchedQueues has today's levels: before P.dead, earlier versions' after them.
  const after = always.findIndex(({ kind }) => kind === 'dead');
  const queues = [...always.slice(0, after), ...levels, ...always.slice(after)];
  const found = [...counts.slice(0, after), ...levelCounts, ...counts.slice(after, always.length)];
  return queues.flatMap(({ queue, kind }, i) => {
    const count = found[i];
    return count ? [{ queue, kind, messages: count.messageCount, consumers: count.consumerCount }] : [];
  });
}
