import amqp, { type AmqpConnectionManager } from 'amqp-connection-manager';
import amqplib, { type Channel, type ChannelModel } from 'amqplib';
import { amqpUrls } from '../config/amqp-urls.js';
import { withTimeout } from '../util/with-timeout.js';
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
 * A one-off connection (CLI, topology, inspection) whose 'error' events are left to the operation
 * that failed to report: without a listener, one would crash the process. `timeoutMs` bounds the
 * connect; without it the operating system's TCP timeout does.
 */
export async function openConnection(url: string, timeoutMs?: number): Promise<ChannelModel> {
  const connection = await amqplib.connect(url, timeoutMs === undefined ? undefined : { timeout: timeoutMs });
  connection.on('error', () => {});
  return connection;
}

/**
 * A channel whose errors the failing operation reports: a channel error (a 404 of a passive declare,
 * a refused declaration) closes the channel and would crash the process without a listener.
 */
export async function openChannel(connection: { createChannel(): Promise<Channel> }): Promise<Channel> {
  const channel = await connection.createChannel();
  channel.on('error', () => {});
  return channel;
}

/**
 * `openChannel` that gives up after `ms` (a connection being cut may never answer); one that opens
 * after that is closed at once.
 */
export async function openChannelWithin(connection: { createChannel(): Promise<Channel> }, ms: number): Promise<Channel> {
  const opening = openChannel(connection);
  try {
    return await withTimeout(opening, ms, () => new Error(`a channel did not open within ${ms} ms`));
  } catch (error) {
    void opening.then(
      (late) => late.close().catch(() => {}),
      () => {},
    );
    throw error;
  }
}

/**
 * A one-off connection to the first broker of `urls` that accepts one. Rejects with
 * `CR_ERR_BROKER_UNREACHABLE`, naming the brokers without their passwords.
 */
export async function connectFirst(urls: string[]): Promise<{ connection: ChannelModel; url: string }> {
  let last: unknown;
  for (const url of urls) {
    try {
      return { connection: await openConnection(url, CONNECT_TIMEOUT_MS), url };
    } catch (error) {
      last = brokerUnreachable(url, error);
    }
  }
  throw last ?? brokerUnreachable(undefined, undefined);
}
