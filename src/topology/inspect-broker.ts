import { randomUUID } from 'node:crypto';
import { openChannel, openConnection } from '../amqp/connect.js';
import { brokerFeatures, type BrokerFeatures } from './queue-arguments.js';

export interface BrokerInfo extends BrokerFeatures {
  /** Whether the broker offers the `x-delayed-message` exchange type (rabbitmq_delayed_message_exchange). */
  hasDelayedPlugin: boolean;
}

/**
 * Reads the broker's version and whether it has the delayed-message plugin, on a connection of its
 * own: declaring an unknown exchange type is a connection-level error (503 COMMAND_INVALID) that
 * would otherwise take the caller's connection down with it.
 */
export async function inspectBroker(url: string): Promise<BrokerInfo> {
  const connection = await openConnection(url);
  try {
    const version = String(connection.connection.serverProperties.version ?? '0.0.0');
    const channel = await openChannel(connection);
    const probe = `callback-relay.probe.${randomUUID()}`;
    const hasDelayedPlugin = await channel
      .assertExchange(probe, 'x-delayed-message', { durable: false, autoDelete: true, arguments: { 'x-delayed-type': 'direct' } })
      .then(async () => {
        await channel.deleteExchange(probe);
        return true;
      })
      .catch(() => false);
    return { ...brokerFeatures(version), hasDelayedPlugin };
  } finally {
    await connection.close().catch(() => {});
  }
}
