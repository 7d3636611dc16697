import type { Channel } from 'amqplib';
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
export async function declareDelayLevels(channel: Channel, names: TopologyNames, queueType: 'quorum' | 'classic'): Promise<void> {
  const laneQueue = (bucket: number): string => names.workQueues[laneOf(bucket, names.workQueues.length)] as string;
  for (let level = 0; level < DELAY_LEVELS; level += 1) {
    // Level 0 dead-letters through the default exchange, straight to P.work: routing by queue name needs
    // no binding, so it cannot miss. Through the topic exchange P.lanes, quorum queues' at-least-once
    // dead-lettering lost retries that fell due across a broker restart (measured in the chaos run).
    const deadLetter = level === 0 ? { exchange: '', routingKey: names.workQueue } : { exchange: names.delayLevel(level - 1) };
    await channel.assertQueue(names.delayLevel(level), { durable: true, arguments: queueArguments({ type: queueType, messageTtlMs: levelTtlMs(level), deadLetter }) });
  }
  const bindLevels = async (exchange: string, top: number): Promise<void> => {
    await channel.assertExchange(exchange, 'topic', { durable: true });
    for (const { bindingKey, to } of levelRoutes(top)) {
      if (to !== 'lanes') await channel.bindQueue(names.delayLevel(to), exchange, bindingKey);
      else for (let bucket = 0; bucket < LANE_BUCKETS; bucket += 1) await channel.bindQueue(laneQueue(bucket), exchange, bindingKey.replace(/\*$/, String(bucket)));
    }
  };
  for (let level = 0; level < DELAY_LEVELS - 1; level += 1) await bindLevels(names.delayLevel(level), level);
  await bindLevels(names.delayExchange, DELAY_LEVELS - 1);
}
