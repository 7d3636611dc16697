import type { Channel } from 'amqplib';
import { connectFirst, openChannel } from '../amqp/connect.js';
import { dueQueue, topologyDeclarations } from './declare-topology.js';
import { declaredNames, brokerFeatures } from './declare-list.js';
import type { TopologyNames } from './topology-names.js';

/**
 * Every queue and exchange a prefix can have, whatever its delay mode and options: the declare list
 * of each variant, P.due, what earlier builds declared (the topic exchange P.lanes, the delay levels
 * of one bit each and those of radix 16 visited highest digit first), and the workers' heartbeat
 * exchange P.presence.
 */
export function teardownNames(names: TopologyNames): { queues: string[]; exchanges: string[] } {
  const every = { names, queueType: 'quorum', deliveryLimit: 1, broker: brokerFeatures('3.13.0'), history: { maxAge: '1D' } } as const;
  const { queues, exchanges } = declaredNames([
    ...topologyDeclarations({ ...every, mode: 'queues' }),
    ...topologyDeclarations({ ...every, mode: 'plugin' }),
    ...dueQueue(names),
  ]);
  const earlier = [names.binaryLevels, names.highFirstLevels];
  return {
    queues: [...queues, ...earlier.flatMap((levels) => levels.queues)],
    exchanges: [...exchanges, ...earlier.flatMap((levels) => levels.exchanges), names.lanesExchange, names.presenceExchange],
  };
}

/**
 * The matching teardown: deletes every queue and exchange of a prefix, messages included (tests,
 * benchmarks and chaos runs leave the broker as they found it). Deleting what does not exist is fine.
 */
export async function deleteTopology(channel: Channel, names: TopologyNames): Promise<void> {
  const { queues, exchanges } = teardownNames(names);
  for (const queue of queues) await channel.deleteQueue(queue);
  for (const exchange of exchanges) await channel.deleteExchange(exchange);
}

/** The teardown on a connection of its own, to the first broker of `urls` that answers. */
export async function deleteTopologyAt(urls: string | string[], names: TopologyNames): Promise<void> {
  const { connection } = await connectFirst(typeof urls === 'string' ? [urls] : urls);
  try {
    await deleteTopology(await openChannel(connection), names);
  } finally {
    await connection.close().catch(() => {});
  }
}
