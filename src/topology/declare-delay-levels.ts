import { binding, exchange, queue, type Declaration } from './declare-list.js';
import { DELAY_LEVELS, levelRoutes, levelTtlMs } from './delay-levels.js';
import { LANE_BUCKETS, laneOf } from './lanes.js';
import { queueArguments } from './queue-arguments.js';
import type { TopologyNames } from './topology-names.js';

/**
 * Queues mode (see delay-levels.ts): level queues P.delay.21 … P.delay.00, the entry exchange
 * P.delay, and exchanges P.delay.20 … P.delay.00, where level n + 1's queue dead-letters its expired
 * messages; level 0 dead-letters into P.work. Each exchange binds the queues of the levels still
 * ahead directly, and, for a key with no level ahead, the lane of its bucket (the key's last word)
 * directly too: a queue, never an exchange, is the target of every binding. Quorum level queues use
 * at-least-once dead-lettering so a message is never dropped between levels:
 * https://www.rabbitmq.com/docs/quorum-queues#dead-lettering
 */
export function delayLevels(names: TopologyNames, queueType: 'quorum' | 'classic'): Declaration[] {
  const laneQueue = (bucket: number): string => names.workQueues[laneOf(bucket, names.workQueues.length)] as string;
  const declarations: Declaration[] = [];
  for (let level = 0; level < DELAY_LEVELS; level += 1) {
    // Level 0 dead-letters through the default exchange, straight to P.work: routing by queue name needs
    // no binding, so it cannot miss. Through the topic exchange P.lanes, quorum queues' at-least-once
    // dead-lettering lost retries that fell due across a broker restart (measured in the chaos run).
    const deadLetter = level === 0 ? { exchange: '', routingKey: names.workQueue } : { exchange: names.delayLevel(level - 1) };
    declarations.push(queue(names.delayLevel(level), queueArguments({ type: queueType, messageTtlMs: levelTtlMs(level), deadLetter })));
  }
  const bindLevels = (name: string, top: number): void => {
    declarations.push(exchange(name, 'topic'));
    for (const { bindingKey, to } of levelRoutes(top)) {
      if (to !== 'lanes') declarations.push(binding(names.delayLevel(to), name, bindingKey));
      else for (let bucket = 0; bucket < LANE_BUCKETS; bucket += 1) declarations.push(binding(laneQueue(bucket), name, bindingKey.replace(/\*$/, String(bucket))));
    }
  };
  for (let level = 0; level < DELAY_LEVELS - 1; level += 1) bindLevels(names.delayLevel(level), level);
  bindLevels(names.delayExchange, DELAY_LEVELS - 1);
  return declarations;
}
