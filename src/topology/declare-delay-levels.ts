import type { Channel } from 'amqplib';
import { DELAY_LEVELS, levelBindingKey, levelTtlMs } from './delay-levels.js';
import { queueArguments } from './queue-arguments.js';
import type { TopologyNames } from './topology-names.js';

/**
 * Queues mode: the entry exchange P.delay and levels P.delay.21 … P.delay.00 (see delay-levels.ts).
 * Each level queue holds messages for its TTL and then dead-letters them to the next lower level's
 * exchange; level 0 dead-letters straight into P.work. Quorum level queues use at-least-once
 * dead-lettering so a message is never dropped between levels:
 * https://www.rabbitmq.com/docs/quorum-queues#dead-lettering
 */
export async function declareDelayLevels(channel: Channel, names: TopologyNames, queueType: 'quorum' | 'classic'): Promise<void> {
  for (let level = 0; level < DELAY_LEVELS; level += 1) {
    const name = names.delayLevel(level);
    const deadLetter = level === 0 ? { exchange: '', routingKey: names.workQueue } : { exchange: names.delayLevel(level - 1) };
    await channel.assertExchange(name, 'topic', { durable: true });
    await channel.assertQueue(name, { durable: true, arguments: queueArguments({ type: queueType, messageTtlMs: levelTtlMs(level), deadLetter }) });
    await channel.bindQueue(name, name, levelBindingKey(level, 1));
    if (level === 0) await channel.bindQueue(names.workQueue, name, levelBindingKey(0, 0));
    else await channel.bindExchange(names.delayLevel(level - 1), name, levelBindingKey(level, 0));
  }
  await channel.assertExchange(names.delayExchange, 'topic', { durable: true });
  await channel.bindExchange(names.delayLevel(DELAY_LEVELS - 1), names.delayExchange, '#');
}
