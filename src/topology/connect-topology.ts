import type { Channel } from 'amqplib';
import type { Logger } from '../logger.js';
import type { RelayConfig } from '../config/load-config.js';
import { amqpUrls } from '../config/amqp-urls.js';
import { redactUrl } from '../config/redact-url.js';
import type { OpenChannel } from './declare-list.js';
import { declareTopology } from './declare-topology.js';
import { resolveDelayMode, type DelayMode } from './delay-mode.js';
import type { BrokerInfo } from './inspect-broker.js';
import { topologyNames, type TopologyNames } from './topology-names.js';
import { waitForBroker } from './wait-for-broker.js';

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
export type TopologySettings = Pick<RelayConfig, 'amqpUrl' | 'delayMode' | 'topologyPrefix' | 'lanes' | 'history' | 'historyMaxAge' | 'queueType' | 'deliveryLimit'>;

/** Waits for the broker, picks the delay mode (logging the choice) and prepares the topology setup. */
export async function connectTopology(config: TopologySettings, logger: Logger, signal: AbortSignal): Promise<ResolvedTopology> {
  const broker = await waitForBroker(amqpUrls(config.amqpUrl), signal, (url, error) =>
    logger.warn({ broker: redactUrl(url), err: error.message }, 'broker unreachable; retrying'),
  );
  const mode = resolveDelayMode(config.delayMode, broker.hasDelayedPlugin);
  const names = topologyNames(config.topologyPrefix, config.lanes);
  logger.info(
    { delayMode: mode, requested: config.delayMode, brokerVersion: broker.version, plugin: broker.hasDelayedPlugin, prefix: names.exchange },
    `delay mode: ${mode}${config.delayMode === 'auto' ? (broker.hasDelayedPlugin ? ' (auto: broker has x-delayed-message)' : ' (auto: broker lacks x-delayed-message)') : ''}`,
  );
  const history = config.history === 'on' ? { maxAge: config.historyMaxAge } : undefined;
  const options = { names, mode, broker, queueType: config.queueType, deliveryLimit: config.deliveryLimit, history };
  return { names, mode, broker, url: broker.url, declare: (channel, openChannel) => declareTopology(channel, options, openChannel) };
}
