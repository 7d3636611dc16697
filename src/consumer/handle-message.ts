import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../logger.js';
import type { Transition } from '../policy/endpoint-health.js';
import { targetOf, type TargetIsolation, type TargetKey } from '../policy/target-isolation.js';
import type { DelayMode } from '../topology/delay-mode.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { TargetGate, type Lane } from './admit.js';
import { decode } from './decode.js';
import type { Decider } from './decide.js';
import { deliver, type DeliverOptions } from './deliver.js';
import { settle, type AttemptRecord } from './settle.js';

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
  const { names, mode, logger, clock, isolation } = deps;
  const gate = new TargetGate(isolation);
  return async function handleMessage(message: ConsumeMessage, channel: ConfirmChannel, lane: Lane): Promise<void> {
    const context = { channel, message, names, mode };
    const decoded = decode(message, deps.maxPayloadBytes);
    if (!decoded.ok) {
      await settle({ kind: 'dead', reason: 'invalid', why: decoded.error }, unattempted(decoded.id, decoded.attempt - 1, decoded.error), context);
      logger.info({ id: decoded.id, reason: 'invalid', error: decoded.error }, 'callback dead-lettered');
      return;
    }
    const { delivery } = decoded;
    const target = targetOf(delivery.callback.url, deps.targetKey);
    const admitted = await gate.admit(target, lane);
    if (admitted.kind !== 'deliver') {
      const settlement = admitted.kind === 'defer' ? { kind: 'defer' as const, delayMs: deps.overflowDelayMs } : admitted;
      await settle(settlement, unattempted(delivery.id, delivery.attempt - 1), context);
      logger.debug({ id: delivery.id, target, action: admitted.kind, why: admitted.why }, 'not delivered now');
      return;
    }
    const startedAt = clock();
    const changed = (transition: Transition | undefined): void => {
      logTransition(logger, transition);
      gate.pump(target);
    };
    const outcome = await watchSlowness(isolation, target, clock, changed, (wasOverdue) =>
      deliver(delivery, deps.deliverOptions).then((result) => {
        changed(isolation?.complete(target, admitted.slot, result, clock(), wasOverdue()));
        return result;
      }),
    );
    const { decision, record } = deps.decide(delivery, outcome, startedAt);
    logger.debug({ id: delivery.id, target, lane, attempt: delivery.attempt, status: outcome.status, error: outcome.error, ms: outcome.durationMs, decision: decision.kind }, 'attempt');
    await settle(decision, record, context);
    if (decision.kind === 'dead') {
      logger.info({ id: delivery.id, target, reason: decision.reason, attempts: record.attempts, status: record.lastStatus, error: record.lastError }, 'callback dead-lettered');
    }
  };
}

function logTransition(logger: Logger, transition: Transition | undefined): void {
  if (!transition) return;
  const message = transition.to === 'degraded' ? 'target degraded: its callbacks move to the slow lane' : 'target recovered';
  logger.warn({ ...transition }, message);
}

/** Runs an attempt; if it outlasts the slow threshold it is reported as abnormal right then. */
async function watchSlowness<T>(
  isolation: TargetIsolation | undefined,
  target: string,
  clock: () => number,
  changed: (transition: Transition | undefined) => void,
  attempt: (wasOverdue: () => boolean) => Promise<T>,
): Promise<T> {
  if (!isolation) return attempt(() => false);
  let overdue = false;
  const timer = setTimeout(() => {
    overdue = true;
    changed(isolation.overdue(target, clock()));
  }, isolation.slowThresholdMs);
  try {
    return await attempt(() => {
      clearTimeout(timer);
      return overdue;
    });
  } finally {
    clearTimeout(timer);
  }
}
