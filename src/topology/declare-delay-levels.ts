import { binding, exchange, queue, type Declaration } from './declare-list.js';
import { DELAY_LEVELS, DIGITS, levelRoutes, levelTtlMs } from './delay-levels.js';
import { LANE_BUCKETS, laneOf } from './lanes.js';
import { queueArguments } from './queue-arguments.js';
import type { TopologyNames } from './topology-names.js';

/**
 * Queues mode (see delay-levels.ts): the 78 level queues P.delay.3145728s … P.delay.1s, the entry
 * exchange P.delay, and one exchange per digit position, P.delay.below.<16^n>s, that the levels of
 * digit n dead-letter their expired messages into. Each exchange binds the levels still ahead
 * directly, and, for a key with none ahead, the lane of its bucket (the key's last word) directly
 * too: a queue, never an exchange, is the target of every binding, so the last hop lands in the
 * message's own lane, and the lanes share the delayed messages as they share fresh ones. Quorum
 * level queues use at-least-once dead-lettering so a message is never dropped between levels:
 * https://www.rabbitmq.com/docs/quorum-queues#dead-lettering
 */
export function delayLevels(names: TopologyNames, queueType: 'quorum' | 'classic'): Declaration[] {
  const laneQueue = (bucket: number): string => names.workQueues[laneOf(bucket, names.workQueues.length)] as string;
  const declarations: Declaration[] = [];
  for (const level of DELAY_LEVELS) {
    const deadLetter = { exchange: names.delayLevelExchange(level.position) };
    declarations.push(queue(names.delayLevel(level.seconds), queueArguments({ type: queueType, messageTtlMs: levelTtlMs(level.seconds), deadLetter })));
  }
  const bindLevels = (name: string, top: number): void => {
    declarations.push(exchange(name, 'topic'));
    for (const { bindingKey, to } of levelRoutes(top)) {
      if (typeof to === 'number') declarations.push(binding(names.delayLevel(to), name, bindingKey));
      // A key without a bucket (a producer that left it out) still ends in a lane: P.work, as plain `deliver` does.
      else if (to === 'no-bucket') declarations.push(binding(names.workQueue, name, bindingKey));
      else for (let bucket = 0; bucket < LANE_BUCKETS; bucket += 1) declarations.push(binding(laneQueue(bucket), name, bindingKey.replace(/\*$/, String(bucket))));
    }
  };
  for (let position = 0; position < DIGITS; position += 1) bindLevels(names.delayLevelExchange(position), position - 1);
  bindLevels(names.delayExchange, DIGITS - 1);
  return declarations;
}
