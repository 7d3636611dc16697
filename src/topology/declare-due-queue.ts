import type { Channel } from 'amqplib';
import { openChannel } from '../amqp/connect.js';
import { applyDeclarations, binding, queue, type Declaration } from './declare-list.js';
import { LANE_BUCKETS } from './lanes.js';
import { queueArguments } from './queue-arguments.js';
import type { TopologyNames } from './topology-names.js';

/**
 * Plugin mode: P.due, where the plugin delivers a message once its delay has ended (routing key
 * `due.<bucket>`, or `due`).
 *
 * The plugin hands such a message to its queues without a confirm, and a quorum queue whose leader is
 * not up drops it. At every broker start the plugin fires all overdue messages at once, before the
 * quorum queues have elected leaders, so a quorum P.work lost every retry that fell due during a
 * restart. Classic queues are up before plugins start, so P.due is classic, and workers move each
 * message on into P.work with a confirmed publish (consumer/move-due.ts). Plugin source:
 * rabbit_delayed_message:route/3 (rabbit_amqqueue:deliver, no confirm).
 *
 * A classic queue lives on one node. While that node is down its declaration fails and closes the
 * channel, so callers declare it on a channel of its own: the rest of the relay keeps working.
 */
export const dueQueue = (names: TopologyNames): Declaration[] => [
  queue(names.dueQueue, queueArguments({ type: 'classic' })),
  binding(names.dueQueue, names.exchange, names.dueRoutingKey),
  // Delays keep their lane bucket: `due.<bucket>`, moved on as `deliver.<bucket>`.
  ...Array.from({ length: LANE_BUCKETS }, (_, bucket) => binding(names.dueQueue, names.exchange, `${names.dueRoutingKey}.${bucket}`)),
];

export const declareDueQueue = (channel: Channel, names: TopologyNames): Promise<void> => applyDeclarations(channel, dueQueue(names));

/**
 * Declares P.due on a short-lived channel of `connection`, best effort: false while its node is down
 * (the workers' movers keep trying). Publishers and `npm run topology` do this too, so that delayed
 * callbacks published before any worker ran find P.due when they fall due.
 */
export async function declareDueQueueAside(connection: { createChannel(): Promise<Channel> }, names: TopologyNames): Promise<boolean> {
  try {
    const channel = await openChannel(connection);
    await declareDueQueue(channel, names);
    await channel.close();
    return true;
  } catch {
    return false;
  }
}
