/*
 * Reaching the broker and putting the topology in place: wait until a broker answers, read what it
 * offers (version, the delayed-message plugin), choose the delay mode, then declare the list once
 * (the CLI, a publisher's first publish) or again on every reconnect and after a channel error.
 */
import { randomUUID } from 'node:crypto';
import type { Channel } from 'amqplib';
import { REPLY, replyCode } from '../amqp/broker-errors.js';
import { openChannel, openConnection } from '../amqp/connect.js';
import { amqpUrls } from '../config/amqp-urls.js';
import type { RelayConfig } from '../config/load-config.js';
import { redactUrl } from '../config/redact-url.js';
import { RelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { sleep, withTimeout } from '../util/with-timeout.js';
import { PROBE_EXCHANGE_PREFIX } from './accounts.js';
import { brokerFeatures, type OpenChannel, type BrokerFeatures } from './declare-list.js';
import { declareTopology, declareDueQueueAside } from './declare-topology.js';
import { resolveDelayMode, type DelayMode } from './delay-levels.js';
import { retireEarlierLevels, type EarlierLevelsHeld } from './retire-earlier-levels.js';
import { topologyNames, type TopologyNames } from './topology-names.js';

export interface ResolvedTopology {
  names: TopologyNames;
  mode: DelayMode;
  broker: BrokerInfo;
  /** The broker URL that answered first. */
  url: string;
  /**
   * Declares the whole topology on a channel; used as the channel's setup, so it replays on every
   * reconnect. With `openChannel` the bindings go on several channels at once (declare-list.ts).
   */
  declare: (channel: Channel, openChannel?: OpenChannel) => Promise<void>;
}

/** The settings the topology is derived from. */
export type TopologySettings = Pick<
  RelayConfig,
  'amqpUrl' | 'delayMode' | 'topologyPrefix' | 'lanes' | 'orderedShards' | 'history' | 'historyMaxAge' | 'queueType' | 'deliveryLimit'
>;

/** Waits for the broker, picks the delay mode (logging the choice) and prepares the topology setup. */
export async function connectTopology(config: TopologySettings, logger: Logger, signal: AbortSignal): Promise<ResolvedTopology> {
  const names = topologyNames(config.topologyPrefix, config.lanes, config.orderedShards);
  const broker = await waitForBroker(
    amqpUrls(config.amqpUrl),
    signal,
    (url, error) => logger.warn({ broker: redactUrl(url), err: error.message }, 'broker unreachable; retrying'),
    names,
  );
  const mode = resolveDelayMode(config.delayMode, broker.hasDelayedPlugin);
  logger.info(
    {
      delayMode: mode,
      requested: config.delayMode,
      brokerVersion: broker.version,
      plugin: broker.hasDelayedPlugin,
      prefix: names.exchange,
    },
    `delay mode: ${mode}${config.delayMode === 'auto' ? (broker.hasDelayedPlugin ? ' (auto: broker has x-delayed-message)' : ' (auto: broker lacks x-delayed-message)') : ''}`,
  );
  const history = config.history === 'on' ? { maxAge: config.historyMaxAge } : undefined;
  const options = { names, mode, broker, queueType: config.queueType, deliveryLimit: config.deliveryLimit, history };
  return { names, mode, broker, url: broker.url, declare: (channel, openChannel) => declareTopology(channel, options, openChannel) };
}

export interface BrokerInfo extends BrokerFeatures {
  /** Whether the broker offers the `x-delayed-message` exchange type (rabbitmq_delayed_message_exchange). */
  hasDelayedPlugin: boolean;
}

/**
 * Reads the broker's version and whether it has the delayed-message plugin, on a connection of its
 * own: declaring an unknown exchange type is a connection-level error (503 COMMAND_INVALID) that
 * would otherwise take the caller's connection down with it.
 */
export async function inspectBroker(url: string, names?: Pick<TopologyNames, 'delayExchange'>): Promise<BrokerInfo> {
  const connection = await openConnection(url);
  try {
    const version = String(connection.connection.serverProperties.version ?? '0.0.0');
    const channel = await openChannel(connection);
    const probe = `${PROBE_EXCHANGE_PREFIX}${randomUUID()}`;
    let refused = false;
    const hasDelayedPlugin = await channel
      .assertExchange(probe, 'x-delayed-message', { durable: false, autoDelete: true, arguments: { 'x-delayed-type': 'direct' } })
      .then(async () => {
        await channel.deleteExchange(probe);
        return true;
      })
      .catch((error: unknown) => {
        refused = replyCode(error) === ACCESS_REFUSED;
        return false;
      });
    // An account without configure rights (a producer, the console: accounts.ts) cannot probe. The
    // topology then tells: P.delay exists in queues mode only, so without it the plugin is in use.
    if (refused && names) return { ...brokerFeatures(version), hasDelayedPlugin: !(await exchangeExists(connection, names.delayExchange)) };
    return { ...brokerFeatures(version), hasDelayedPlugin };
  } finally {
    await connection.close().catch(() => {});
  }
}

/** AMQP's access-refused: the account lacks the permission: https://www.rabbitmq.com/amqp-0-9-1-reference#constants */
export const ACCESS_REFUSED = 403;

/** Whether exchange `name` exists: a passive declare (no permission needed) on a channel of its own, since a 404 closes it. */
export async function exchangeExists(connection: { createChannel(): Promise<Channel> }, name: string): Promise<boolean> {
  const channel = await openChannel(connection);
  try {
    await channel.checkExchange(name);
    await channel.close().catch(() => {});
    return true;
  } catch (error) {
    if (replyCode(error) === REPLY.notFound) return false;
    throw error;
  }
}

/**
 * Inspects the first broker of `urls` that answers, retrying with a growing pause (1 s up to 10 s)
 * while none does, as the connection manager does for the main connection. Resolves with the URL
 * that answered. Rejects with `CR_ERR_CLOSED` once `signal` aborts.
 */
export async function waitForBroker(
  urls: string[],
  signal: AbortSignal,
  onRetry: (url: string, error: Error) => void = () => {},
  names?: Pick<TopologyNames, 'delayExchange'>,
): Promise<BrokerInfo & { url: string }> {
  for (let pauseMs = 1_000; ; pauseMs = Math.min(pauseMs * 2, 10_000)) {
    for (const url of urls) {
      if (signal.aborted) throw new RelayError('CR_ERR_CLOSED', 'closed while waiting for the broker');
      try {
        return { ...(await inspectBroker(url, names)), url };
      } catch (error) {
        onRetry(url, error as Error);
      }
    }
    await sleep(pauseMs, signal);
  }
}

/**
 * Declares `topology` on a short-lived connection. Workers do this once before consuming so that a
 * conflicting topology (`CR_ERR_TOPOLOGY`) stops them at start instead of looping through reconnects.
 * A quorum queue that another process is declaring at the same moment may not have started yet: the
 * broker then refuses the queue.declare with 404 ("home node … down or inaccessible", seen on 4.3), and
 * the same declaration a moment later succeeds, so that answer alone is tried again, a few times.
 *
 * With `untilBroker`, a declaration cut short because the broker went away (it restarts, the
 * connection dropped) is tried again too, with a growing pause, until the signal aborts: a worker
 * starting while the broker restarts waits for it as it waits for a broker not up yet, instead of
 * exiting. A refusal (a conflicting queue, access refused) still fails at once.
 */
export async function applyTopology(
  url: string,
  topology: ResolvedTopology,
  untilBroker?: { signal: AbortSignal; onRetry: (error: Error) => void },
): Promise<AppliedTopology> {
  for (let attempt = 1, pauseMs = 1_000; ; attempt += 1) {
    try {
      return await applyTopologyOnce(url, topology);
    } catch (error) {
      if (queueNotStartedYet(error) && attempt < DECLARE_ATTEMPTS) {
        await sleep(attempt * 500);
      } else if (untilBroker && !untilBroker.signal.aborted && brokerWentAway(error)) {
        untilBroker.onRetry(error as Error);
        await sleep(pauseMs, untilBroker.signal);
        pauseMs = Math.min(pauseMs * 2, 10_000);
      } else {
        throw error;
      }
    }
  }
}

const DECLARE_ATTEMPTS = 5;

/** AMQP's connection-forced (the broker closes connections as it stops): https://www.rabbitmq.com/amqp-0-9-1-reference#constants */
const CONNECTION_FORCED = 320;

/**
 * Whether a declaration failed because the broker went away rather than because it refused: no reply
 * code at all (the socket closed, amqplib's "channel ended"; a connect refused carries a string code)
 * or connection-forced, on the error or on the CR_ERR_TOPOLOGY's cause.
 */
export function brokerWentAway(error: unknown): boolean {
  const cause = (error as { cause?: unknown } | undefined)?.cause ?? error;
  const code = replyCode(cause);
  return code === undefined || code === CONNECTION_FORCED;
}

/** The broker's 404 to a queue.declare (AMQP class 50, method 10), as the cause of CR_ERR_TOPOLOGY. */
export function queueNotStartedYet(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown; classId?: unknown; methodId?: unknown } } | undefined)?.cause;
  return cause?.code === 404 && cause.classId === 50 && cause.methodId === 10;
}

/** What a start-time declaration found. */
export interface AppliedTopology {
  /** Queues mode: the delay levels of earlier versions the prefix still has, unbound now, and what they hold. */
  earlierLevels?: EarlierLevelsHeld | undefined;
}

async function applyTopologyOnce(url: string, topology: ResolvedTopology): Promise<AppliedTopology> {
  const connection = await openConnection(url);
  try {
    const channel = await openChannel(connection);
    await topology.declare(channel, () => openChannel(connection));
    await channel.close();
    if (topology.mode === 'plugin') await declareDueQueueAside(connection, topology.names);
    return topology.mode === 'queues' ? { earlierLevels: await retireEarlierLevels(connection, topology.names) } : {};
  } finally {
    await connection.close().catch(() => {});
  }
}

/** Declares the topology once and disconnects (`npm run topology`); gives up after `timeoutMs` without a broker. */
export async function declareOnce(
  config: TopologySettings,
  logger: Logger,
  timeoutMs = 30_000,
): Promise<ResolvedTopology & AppliedTopology> {
  const topology = await connectTopology(config, logger, AbortSignal.timeout(timeoutMs));
  return { ...topology, ...(await applyTopology(topology.url, topology)) };
}

/**
 * Declares the whole topology again, for a publish the broker returned as unroutable (an operator
 * deleted a queue or a binding). It runs on a short-lived connection of its own, so a conflicting
 * declaration closes that connection, not the channel that publishes; concurrent requests share one
 * run, and it gives up after `timeoutMs` with `CR_ERR_PUBLISH_TIMEOUT`.
 */
export function createRedeclare(topology: ResolvedTopology, timeoutMs: number): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => {
    running ??= withTimeout(
      applyTopology(topology.url, topology).then(() => {}),
      timeoutMs,
      () => new RelayError('CR_ERR_PUBLISH_TIMEOUT', `could not declare the topology again within ${timeoutMs} ms (PUBLISH_TIMEOUT)`),
    ).finally(() => (running = undefined));
    return running;
  };
}
