import type { Channel } from 'amqplib';
import { RelayError } from '../errors.js';
import { declareDelayLevels } from './declare-delay-levels.js';
import { declareDeliveryPath } from './declare-delivery-path.js';
import { declareHistory } from '../history/declare-history.js';
import { declareControl } from '../control/declare-control.js';
import { declarePaused } from '../control/declare-paused.js';
import type { DelayMode } from './delay-mode.js';
import type { BrokerFeatures } from './queue-arguments.js';
import type { TopologyNames } from './topology-names.js';

export interface TopologyOptions {
  names: TopologyNames;
  mode: DelayMode;
  queueType: 'quorum' | 'classic';
  deliveryLimit: number;
  broker: BrokerFeatures;
  /** HISTORY=on: the stream P.history and its retention (HISTORY_MAX_AGE). */
  history?: { maxAge: string } | undefined;
}

/**
 * Declares everything, idempotently; run on every (re)connect as a channel setup. Quorum delay
 * queues need message TTL with at-least-once dead-lettering (3.10+); older brokers get classic ones.
 */
export async function declareTopology(channel: Channel, options: TopologyOptions): Promise<void> {
  const { names, mode, queueType, deliveryLimit, broker } = options;
  try {
    await declareDeliveryPath(channel, names, { mode, queueType, deliveryLimit });
    // Queues that dead-letter expired messages: quorum only with at-least-once dead-lettering.
    const expiring = queueType === 'quorum' && broker.quorumDeadLettering ? 'quorum' : 'classic';
    if (mode === 'queues') await declareDelayLevels(channel, names, expiring);
    if (options.history) await declareHistory(channel, names, options.history.maxAge);
    await declareControl(channel, names);
    await declarePaused(channel, names, expiring);
  } catch (error) {
    throw new RelayError(
      'CR_ERR_TOPOLOGY',
      `could not declare the topology of prefix "${names.exchange}" (${(error as Error).message}). ` +
        'If it already exists with other settings (DELAY_MODE, QUEUE_TYPE, DELIVERY_LIMIT), use another TOPOLOGY_PREFIX or delete the old one.',
      { cause: error },
    );
  }
}

/**
 * The matching teardown: deletes every queue and exchange of a prefix, messages included (tests,
 * benchmarks and chaos runs leave the broker as they found it). Deleting what does not exist is fine.
 */
export async function deleteTopology(channel: Channel, names: TopologyNames): Promise<void> {
  for (const queue of [...names.workQueues, names.slowQueue, names.dueQueue, names.deadQueue, names.historyQueue, names.controlQueue, names.pausedQueue, names.pausedCheckQueue, ...names.delayLevels]) await channel.deleteQueue(queue);
  for (const exchange of [names.exchange, names.eventsExchange, names.delayExchange, names.lanesExchange, ...names.delayLevels]) await channel.deleteExchange(exchange);
}
