import amqplib, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { RelayConfig } from '../config/load-config.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { redactUrl } from '../config/redact-url.js';
import { RelayError } from '../errors.js';
import { resolveDelayMode, type DelayMode } from '../topology/delay-mode.js';
import { inspectBroker } from '../topology/inspect-broker.js';
import { topologyNames, type TopologyNames } from '../topology/topology-names.js';

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
export async function openDeadQueueSession(config: RelayConfig): Promise<DeadQueueSession> {
  const names = topologyNames(config.topologyPrefix);
  const { connection, url } = await connectFirst(amqpUrls(config.amqpUrl));
  // Without listeners an 'error' event would crash the process; the failing operation reports it instead.
  connection.on('error', () => {});
  try {
    const probe = async (check: (channel: Channel) => Promise<unknown>, what: string): Promise<void> => {
      const channel = await connection.createChannel();
      channel.on('error', () => {});
      try {
        await check(channel);
      } catch (error) {
        // 404 NOT_FOUND is the answer for a missing queue or exchange; anything else is reported as it is.
        if ((error as { code?: unknown }).code !== 404) throw error;
        throw new RelayError(
          'CR_ERR_CONFIG',
          `TOPOLOGY_PREFIX: ${what} does not exist on the broker (value was "${config.topologyPrefix}"; a worker, a publisher or \`npm run topology\` declares it)`,
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
      delayMode: async () => resolveDelayMode(config.delayMode, (await inspectBroker(url)).hasDelayedPlugin),
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

/** The text with the URL, and its password on its own, replaced: a client error may quote either. */
function scrub(text: string, url: string): string {
  let clean = text.split(url).join(redactUrl(url));
  try {
    const password = decodeURIComponent(new URL(url).password);
    if (password.length > 0) clean = clean.split(password).join('***');
  } catch {
    // Not a parseable URL: the split above already removed it wherever it appeared whole.
  }
  return clean;
}

/** The first broker of the list that accepts a connection; the error names them without passwords. */
export async function connectFirst(urls: string[]): Promise<{ connection: ChannelModel; url: string }> {
  let last: Error | undefined;
  for (const url of urls) {
    try {
      return { connection: await amqplib.connect(url, { timeout: 10_000 }), url };
    } catch (error) {
      last = new Error(`cannot connect to the broker at ${redactUrl(url)}: ${scrub((error as Error).message, url)}`, { cause: error });
    }
  }
  throw last ?? new Error('AMQP_URL names no broker');
}
