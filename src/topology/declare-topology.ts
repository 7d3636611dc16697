import type { Channel } from 'amqplib';
import { RelayError } from '../errors.js';
import { historyStream } from '../history/declare-history.js';
import { delayLevels } from './declare-delay-levels.js';
import { deliveryPath } from './declare-delivery-path.js';
import { applyDeclarations, type Declaration, type OpenChannel } from './declare-list.js';
import { controlStream } from '../control/declare-control.js';
import { pausedQueues } from '../control/declare-paused.js';
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
 * The whole topology of one prefix as an ordered list: each part's exchanges, queues and bindings,
 * a queue before its bindings. One entry per part; the teardown (teardown.ts) deletes whatever this
 * list can hold. Quorum delay queues need message TTL with at-least-once dead-lettering (3.10+);
 * older brokers get classic ones. Plugin mode's P.due is declared apart (declare-due-queue.ts).
 */
export function topologyDeclarations(options: TopologyOptions): Declaration[] {
  const { names, mode, queueType, deliveryLimit, broker } = options;
  // Queues that dead-letter expired messages: quorum only with at-least-once dead-lettering.
  const expiring = queueType === 'quorum' && broker.quorumDeadLettering ? 'quorum' : 'classic';
  return [
    ...deliveryPath(names, { mode, queueType, deliveryLimit }),
    ...(mode === 'queues' ? delayLevels(names, expiring) : []),
    ...(options.history ? historyStream(names, options.history.maxAge) : []),
    ...controlStream(names),
    ...pausedQueues(names, expiring),
  ];
}

/**
 * Declares everything, idempotently; run on every (re)connect as a channel setup. `openChannel`
 * (another channel on the same connection) lets the bindings go in parallel (see applyDeclarations).
 */
export async function declareTopology(channel: Channel, options: TopologyOptions, openChannel?: OpenChannel): Promise<void> {
  try {
    await applyDeclarations(channel, topologyDeclarations(options), openChannel);
  } catch (error) {
    throw new RelayError(
      'CR_ERR_TOPOLOGY',
      `could not declare the topology of prefix "${options.names.exchange}" (${(error as Error).message}). ` +
        'If it already exists with other settings (DELAY_MODE, QUEUE_TYPE, DELIVERY_LIMIT), use another TOPOLOGY_PREFIX or delete the old one.',
      { cause: error },
    );
  }
}
