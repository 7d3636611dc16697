import type { Channel } from 'amqplib';
import { checkQueues } from '../amqp/check-queues.js';
import { openChannel } from '../amqp/connect.js';
import { DELAY_BITS } from './delay-levels.js';
import type { TopologyNames } from './topology-names.js';
import { withTimeout } from '../util/with-timeout.js';

/**
 * Earlier versions spent one delay level per bit: the entry exchange P.delay bound the queues
 * P.delay.21 … P.delay.00, each keyed by its bit's word after zeros. The routing key is the same
 * today, so after an upgrade those bindings would send every new delayed message down both the old
 * levels and the new ones, to be delivered twice. At start, where the old levels exist, the worker
 * (and `npm run topology`) unbinds them from P.delay. The old queues and their exchanges P.delay.20 …
 * P.delay.00 keep their own bindings, so what they hold goes on down them into the lanes, on time
 * (the longest delay is 48.5 days); then they can be deleted (docs/delay-modes.md). A publisher does
 * it too before its first publish, so the order in which an upgrade starts publishers and workers
 * does not matter.
 */

/** P.delay's binding of each old level: the bit's word 1 after zeros for the higher bits, then anything. */
export function binaryLevelBindings(names: TopologyNames): { queue: string; key: string }[] {
  return names.binaryLevels.queues.map((queue, i) => ({ queue, key: [...Array<string>(i).fill('0'), '1', '#'].join('.') }));
}

/**
 * Unbinds the old levels from P.delay if they exist; returns the messages they still hold, or
 * undefined when the prefix has none. Unbinding a binding that is gone already is a no-op, and an
 * old queue an operator deleted is skipped.
 */
export async function retireBinaryLevels(connection: { createChannel(): Promise<Channel> }, names: TopologyNames): Promise<number | undefined> {
  // Fast path for a prefix that never had them (every new one): its lowest old level is missing.
  const [lowest] = await checkQueues(connection, [names.binaryLevels.queues[DELAY_BITS - 1] as string]);
  if (!lowest) return undefined;
  const counts = await checkQueues(connection, names.binaryLevels.queues);
  const channel = await openChannel(connection);
  let held = 0;
  try {
    for (const [i, { queue, key }] of binaryLevelBindings(names).entries()) {
      const found = counts[i];
      if (!found) continue;
      await channel.unbindQueue(queue, names.delayExchange, key);
      held += found.messageCount;
    }
    return held;
  } finally {
    await channel.close().catch(() => {});
  }
}

/**
 * For a publisher's channel setup, which its publishes wait for: retireBinaryLevels on channels of
 * their own, given up after `withinMs` (a connection being cut can leave a channel open unanswered)
 * and never throwing. Returns what retireBinaryLevels does, or undefined when it failed or gave up.
 */
export function retireBinaryLevelsAside(connection: { createChannel(): Promise<Channel> }, names: TopologyNames, withinMs = 5_000): Promise<number | undefined> {
  return withTimeout(retireBinaryLevels(connection, names), withinMs, () => new Error('gave up')).catch(() => undefined);
}
