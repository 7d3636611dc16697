import { openChannel, openConnection } from '../amqp/connect.js';
import type { Logger } from '../logger.js';
import { connectTopology, type ResolvedTopology, type TopologySettings } from './connect-topology.js';
import { declareDueQueueAside } from './declare-due-queue.js';

/**
 * Declares `topology` on a short-lived connection. Workers do this once before consuming so that a
 * conflicting topology (`CR_ERR_TOPOLOGY`) stops them at start instead of looping through reconnects.
 */
export async function applyTopology(url: string, topology: ResolvedTopology): Promise<void> {
  const connection = await openConnection(url);
  try {
    const channel = await openChannel(connection);
    await topology.declare(channel, () => openChannel(connection));
    await channel.close();
    if (topology.mode === 'plugin') await declareDueQueueAside(connection, topology.names);
  } finally {
    await connection.close().catch(() => {});
  }
}

/** Declares the topology once and disconnects (`npm run topology`); gives up after `timeoutMs` without a broker. */
export async function declareOnce(config: TopologySettings, logger: Logger, timeoutMs = 30_000): Promise<ResolvedTopology> {
  const topology = await connectTopology(config, logger, AbortSignal.timeout(timeoutMs));
  await applyTopology(topology.url, topology);
  return topology;
}
