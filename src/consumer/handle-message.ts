import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../logger.js';
import type { Transition } from '../policy/endpoint-health.js';
import { targetOf, type TargetIsolation, type TargetKey } from '../policy/target-isolation.js';
import type { DelayMode } from '../topology/delay-mode.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { TargetGate, type Lane } from './admit.js';
import { AttemptDeadline } from './attempt-deadline.js';
import { decode } from './decode.js';
import type { Decider } from './decide.js';
import { deliver, type DeliverOptions } from './deliver.js';
import { settle, type AttemptRecord, type SettleContext, type SettleFallback } from './settle.js';
import type { PipelineObserver } from './observer.js';

export interface PipelineDeps {
  names: TopologyNames;
  mode: DelayMode;
  maxPayloadBytes: number;
  deliverOptions: DeliverOptions;
  decide: Decider;
  /** Absent when isolation is off. */
  isolation: TargetIsolation | undefined;
  targetKey: TargetKey;
  /** How long a message of a busy target is deferred when its waiting room is full. */
  overflowDelayMs: number;
  clock: () => number;
  logger: Logger;
  observer: PipelineObserver;
  /** Confirm timeout and topology redeclare for settle (see SettleContext). */
  settle?: Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'>;
}

const unattempted = (id: string, attempts: number, lastError?: string): AttemptRecord => ({
  id,
  attempts,
  firstAttemptAt: undefined,
  lastAttemptAt: undefined,
  lastStatus: undefined,
  lastError,
});

/** The per-message pipeline: decode → admit → deliver → decide → settle. Rejects only when settling failed. */
export function createMessageHandler(deps: PipelineDeps) {
  const { names, mode, logger, clock, isolation, observer } = deps;
  const gate = new TargetGate(isolation);
  return async function handleMessage(message: ConsumeMessage, channel: ConfirmChannel, lane: Lane): Promise<void> {
    observer.inFlight(1);
    try {
      await pipeline(message, { channel, message, names, mode, onConfirm: observer.confirmed, onFallback, ...deps.settle }, lane);
    } finally {
      observer.inFlight(-1);
    }
  };

  function onFallback({ id, kind, cause, error }: SettleFallback): void {
    logger.error({ id, kind, cause, err: error.message }, 'could not store a copy: the message was rejected, for the broker to dead-letter to P.dead');
    observer.settleFallback(kind, cause);
  }

  async function pipeline(message: ConsumeMessage, context: SettleContext, lane: Lane): Promise<void> {
    const decoded = decode(message, deps.maxPayloadBytes);
    if (!decoded.ok) {
      if (!(await settle({ kind: 'dead', reason: 'invalid', why: decoded.error }, unattempted(decoded.id, decoded.attempt - 1, decoded.error), context))) return;
      logger.info({ id: decoded.id, reason: 'invalid', error: decoded.error }, 'callback dead-lettered');
      observer.invalid(decoded.id, decoded.error);
      return;
    }
    const { delivery } = decoded;
    const target = targetOf(delivery.url, deps.targetKey);
    const admitted = await gate.admit(target, lane);
    if (admitted.kind !== 'deliver') {
      const settlement = admitted.kind === 'defer' ? { kind: 'defer' as const, delayMs: deps.overflowDelayMs } : admitted;
      if (!(await settle(settlement, unattempted(delivery.id, delivery.attempt - 1), context))) return;
      logger.debug({ id: delivery.id, target, action: admitted.kind, why: admitted.why }, 'not delivered now');
      observer.moved(admitted.kind === 'defer' ? 'deferred' : 'slow', admitted.why);
      return;
    }
    const startedAt = clock();
    const changed = (transition: Transition | undefined): void => {
      if (transition) {
        logger.warn({ ...transition }, transition.to === 'degraded' ? 'target degraded: its callbacks move to the slow lane' : 'target recovered');
        observer.transition(transition);
      }
      gate.pump(target);
    };
    const deadline = new AttemptDeadline(deps.deliverOptions.timeoutMs, isolation && { afterMs: isolation.slowThresholdMs, onSlow: () => changed(isolation.overdue(target, clock())) });
    const outcome = await deliver(delivery, deps.deliverOptions, deadline);
    const wasOverdue = deadline.finish();
    changed(isolation?.complete(target, admitted.slot, outcome, clock(), wasOverdue));
    const { decision, record } = deps.decide(delivery, outcome, startedAt);
    if (logger.isLevelEnabled('debug')) {
      logger.debug({ id: delivery.id, target, lane, attempt: delivery.attempt, status: outcome.status, error: outcome.error, ms: outcome.durationMs, decision: decision.kind }, 'attempt');
    }
    if (!(await settle(decision, record, context))) return;
    if (decision.kind === 'dead') {
      logger.info({ id: delivery.id, target, reason: decision.reason, attempts: record.attempts, status: record.lastStatus, error: record.lastError }, 'callback dead-lettered');
    }
    const nextAttemptAt = decision.kind === 'retry' ? new Date(clock() + decision.delayMs).toISOString() : undefined;
    observer.attempted({ id: delivery.id, url: delivery.callback.url, target, lane, attempt: delivery.attempt, outcome, decision, nextAttemptAt });
  }
}
