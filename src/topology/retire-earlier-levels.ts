import type { Channel } from 'amqplib';
import { checkQueues } from '../amqp/check-queues.js';
import { openChannel } from '../amqp/connect.js';
import { earlierLevels } from './level-layouts.js';
import type { TopologyNames } from './topology-names.js';
import { withTimeout } from '../util/with-timeout.js';

/**
 * Earlier versions had other delay levels, bound from the same entry exchange P.delay with the same
 * routing key: one level per bit (P.delay.21 … P.delay.00), then radix 16 visited highest digit first
 * (P.delay.3145728s … P.delay.1s). After an upgrade those bindings would send every new delayed
 * message down both the old levels and the new ones, to be delivered twice. At start, where old levels
 * exist, the worker (and `npm run topology`) unbinds them from P.delay. The old queues and their own
 * exchanges keep their bindings, so what they hold goes on through them into the lanes, on time (the
 * longest delay is 48.5 days); then they can be deleted (docs/delay-modes.md). A publisher does it too
 * before its first publish, so the order in which an upgrade starts publishers and workers does not
 * matter.
 */

/** What an upgrade found: the messages the old levels still hold, and which versions' levels. */
export interface EarlierLevelsHeld {
  messages: number;
  /** Each version's queues found, as `P.delay.21 … P.delay.00`. */
  levels: string[];
}

/**
 * Unbinds the old levels from P.delay where they exist; returns what they still hold, or undefined
 * when the prefix has none. Unbinding a binding that is gone already is a no-op, and an old queue an
 * operator deleted is skipped.
 */
export async function retireEarlierLevels(
  connection: { createChannel(): Promise<Channel> },
  names: TopologyNames,
): Promise<EarlierLevelsHeld | undefined> {
  const versions = earlierLevels(names);
  // Fast path for a prefix that never had them (every new one): each version's lowest level is missing.
  const probes = await checkQueues(
    connection,
    versions.map(({ probe }) => probe),
  );
  const found = versions.filter((_, i) => probes[i]);
  if (found.length === 0) return undefined;
  const bindings = found.flatMap((version) => version.bindings);
  const counts = await checkQueues(
    connection,
    bindings.map(({ queue }) => queue),
  );
  const channel = await openChannel(connection);
  let messages = 0;
  try {
    for (const [i, { queue, key }] of bindings.entries()) {
      const count = counts[i];
      if (!count) continue;
      await channel.unbindQueue(queue, names.delayExchange, key);
      messages += count.messageCount;
    }
    return { messages, levels: found.map(({ label }) => label) };
  } finally {
    await channel.close().catch(() => {});
  }
}

/**
 * For a publisher's channel setup, which its publishes wait for: retireEarlierLevels on channels of
 * their own, given up after `withinMs` (a connection being cut can leave a channel open unanswered)
 * and never throwing. Returns what retireEarlierLevels does, or undefined when it failed or gave up.
 */
export function retireEarlierLevelsAside(
  connection: { createChannel(): Promise<Channel> },
  names: TopologyNames,
  withinMs = 5_000,
): Promise<EarlierLevelsHeld | undefined> {
  return withTimeout(retireEarlierLevels(connection, names), withinMs, () => new Error('gave up')).catch(() => undefined);
}
