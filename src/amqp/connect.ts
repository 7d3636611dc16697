import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import amqplib, { type ChannelModel } from 'amqplib';
import { amqpUrls } from '../config/amqp-urls.js';
import { brokerUnreachable } from './broker-errors.js';

/**
 * Reconnecting connections (worker, publisher): try again every second, the brokers of AMQP_URL in
 * turn, and notice a dead peer within about 20 s (two missed heartbeats):
 * https://www.rabbitmq.com/docs/heartbeats
 */
export const MANAGER_OPTIONS = { reconnectTimeInSeconds: 1, heartbeatIntervalInSeconds: 10 } as const;

/** How long a one-off connection (CLI, topology, inspection) waits for the broker to answer. */
export const CONNECT_TIMEOUT_MS = 10_000;

/** A reconnecting connection to the brokers of AMQP_URL (one URL or several separated by commas). */
export const connectManager = (amqpUrl: string): AmqpConnectionManager => amqp.connect(amqpUrls(amqpUrl), MANAGER_OPTIONS);

/**
 * A one-off connection to the first broker of `urls` that accepts one. Rejects with
 * `CR_ERR_BROKER_UNREACHABLE`, naming the brokers without their passwords.
 */
export async function connectFirst(urls: string[]): Promise<{ connection: ChannelModel; url: string }> {
  let last: unknown;
  for (const url of urls) {
    try {
      return { connection: await amqplib.connect(url, { timeout: CONNECT_TIMEOUT_MS }), url };
    } catch (error) {
      last = brokerUnreachable(url, error);
    }
  }
  throw last ?? brokerUnreachable(undefined, undefined);
}
