import type { Channel, ConfirmChannel } from 'amqplib';
import { isNotFound } from '../amqp/broker-errors.js';
import { connectFirst, openChannel } from '../amqp/connect.js';
import type { RelayConfig } from '../config/load-config.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { RelayError } from '../errors.js';
import { resolveDelayMode, type DelayMode } from '../topology/delay-levels.js';
import { inspectBroker } from '../topology/connect-topology.js';
import { topologyNames, type TopologyNames } from '../topology/topology-names.js';

/** The settings a DLQ session reads: where the broker is, the prefix, the publish timeout, the delay mode. */
export type DeadQueueSettings = Pick<RelayConfig, 'amqpUrl' | 'topologyPrefix' | 'publishTimeout' | 'delayMode'>;

/** A connection to the broker with a confirm channel, for one DLQ command. */
export interface DeadQueueSession {
  names: TopologyNames;
  /** Confirm channel: copies are published and confirmed on it, and P.dead messages taken and settled. */
  channel: ConfirmChannel;
  /** Ready messages in P.dead when the session opened. */
  messageCount: number;
  /** How long a publish may wait for its confirm (PUBLISH_TIMEOUT). */
  publishTimeoutMs: number;
  /** The delay mode the relay runs in on this broker: DELAY_MODE resolved as a worker resolves it. */
  delayMode(): Promise<DelayMode>;
  /** Throws `CR_ERR_CONFIG` naming TOPOLOGY_PREFIX when exchange P does not exist. */
  requireExchange(): Promise<void>;
  /** Closes the channel, which settles nothing: messages still unacked go back to P.dead. */
  close(): Promise<void>;
}

/**
 * Connects and checks that P.dead exists. The checks run on a throwaway channel because a missing
 * queue or exchange is a channel error (404) that would close the working channel. Errors never
 * carry AMQP_URL's password.
 */
export async function openDeadQueueSession(config: DeadQueueSettings): Promise<DeadQueueSession> {
  const names = topologyNames(config.topologyPrefix);
  const { connection, url } = await connectFirst(amqpUrls(config.amqpUrl));
  try {
    const probe = async (check: (channel: Channel) => Promise<unknown>, what: string): Promise<void> => {
      const channel = await openChannel(connection);
      try {
        await check(channel);
      } catch (error) {
        // NOT_FOUND is the answer for a missing queue or exchange; anything else is reported as it is.
        if (!isNotFound(error)) throw error;
        throw new RelayError(
          'CR_ERR_CONFIG',
          `TOPOLOGY_PREFIX: ${what} does not exist on the broker (value was "${config.topologyPrefix}"; a worker or \`callback-relay topology\` declares it)`,
          { cause: error },
        );
      }
      await channel.close().catch(() => {});
    };
    let messageCount = 0;
    await probe(async (channel) => ({ messageCount } = await channel.checkQueue(names.deadQueue)), `queue "${names.deadQueue}"`);
    const channel = await connection.createConfirmChannel();
    channel.on('error', () => {});
    return {
      names,
      channel,
      messageCount,
      publishTimeoutMs: config.publishTimeout,
      // On a connection of its own: probing for the plugin's exchange type is a connection error without it.
      delayMode: async () => resolveDelayMode(config.delayMode, (await inspectBroker(url, names)).hasDelayedPlugin),
      requireExchange: () => probe((ch) => ch.checkExchange(names.exchange), `exchange "${names.exchange}"`),
      async close() {
        await channel.close().catch(() => {});
        await connection.close().catch(() => {});
      },
    };
  } catch (error) {
    await connection.close().catch(() => {});
    throw error;
  }
}
