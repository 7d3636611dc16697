import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../logger.js';
import type { DelayMode } from '../topology/delay-mode.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { decode } from './decode.js';
import type { Decider } from './decide.js';
import { deliver, type DeliverOptions } from './deliver.js';
import { settle } from './settle.js';

export interface PipelineDeps {
  names: TopologyNames;
  mode: DelayMode;
  maxPayloadBytes: number;
  deliverOptions: DeliverOptions;
  decide: Decider;
  clock: () => number;
  logger: Logger;
}

/** The per-message pipeline: decode → deliver → decide → settle. Rejects only when settling failed. */
export function createMessageHandler(deps: PipelineDeps) {
  const { names, mode, logger, clock } = deps;
  return async function handleMessage(message: ConsumeMessage, channel: ConfirmChannel): Promise<void> {
    const context = { channel, message, names, mode };
    const decoded = decode(message, deps.maxPayloadBytes);
    if (!decoded.ok) {
      const record = { id: decoded.id, attempts: decoded.attempt - 1, firstAttemptAt: undefined, lastAttemptAt: undefined, lastStatus: undefined, lastError: decoded.error };
      await settle({ kind: 'dead', reason: 'invalid', why: decoded.error }, record, context);
      logger.info({ id: decoded.id, reason: 'invalid', error: decoded.error }, 'callback dead-lettered');
      return;
    }
    const { delivery } = decoded;
    const startedAt = clock();
    const outcome = await deliver(delivery, deps.deliverOptions);
    const { decision, record } = deps.decide(delivery, outcome, startedAt);
    const target = new URL(delivery.callback.url).origin;
    logger.debug({ id: delivery.id, target, attempt: delivery.attempt, status: outcome.status, error: outcome.error, ms: outcome.durationMs, decision: decision.kind }, 'attempt');
    await settle(decision, record, context);
    if (decision.kind === 'dead') {
      logger.info({ id: delivery.id, target, reason: decision.reason, attempts: record.attempts, status: record.lastStatus, error: record.lastError }, 'callback dead-lettered');
    }
  };
}
