import amqplib from 'amqplib';
import type { RelayConfig } from '../config/load-config.js';
import type { Logger } from '../logger.js';
import { connectTopology, type ResolvedTopology } from './connect-topology.js';

/** Declares the topology once and disconnects (`npm run topology`); gives up after `timeoutMs` without a broker. */
export async function declareOnce(config: RelayConfig, logger: Logger, timeoutMs = 30_000): Promise<ResolvedTopology> {
  const topology = await connectTopology(config, logger, AbortSignal.timeout(timeoutMs));
  const connection = await amqplib.connect(config.amqpUrl);
  try {
    const channel = await connection.createChannel();
    await topology.declare(channel);
    await channel.close();
  } finally {
    await connection.close().catch(() => {});
  }
  return topology;
}
