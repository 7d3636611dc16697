import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { DurableEvents } from '../events/durable-events.js';
import type { Logger } from '../logger.js';
import type { AttemptReport, Lane, MoveKind, PipelineObserver } from '../reports.js';
import { sendBack, type ReturnRoute } from '../settle/send-back.js';
import { settle, type AttemptRecord, type Move, type Settlement, type SettleContext, type SettleFallback } from '../settle/settle.js';
import type { DelayMode } from '../topology/delay-levels.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** A message as the broker holds it: the channel it came on, its lane, and its lane bucket (retries go back to their own lane). */
export interface Place {
  message: ConsumeMessage;
  channel: ConfirmChannel;
  lane: Lane;
  bucket: number;
  /** An ordered callback's bucket (its orderKey's): its copies go back to its shard, stamped (docs/ordering.md). */
  orderBucket?: number | undefined;
  /** An ordered callback's key records, once its outcome is stored and before its ack (settle.ts `beforeAck`). */
  beforeAck?: SettleContext['beforeAck'];
}

/**
 * Everything the per-message path does to the broker: the stages decide, these carry it out. Each
 * throws when the message's channel is gone (the broker has requeued the message then).
 */
export interface MessageEffects {
  /**
   * Step 5: carry out a settlement on the message's channel (settle/settle.ts: a copy confirmed
   * before the ack), then report it. False when no copy could be stored and the message was
   * rejected to P.dead (or, a hold, sent back) instead: nothing is reported then.
   */
  settle(at: Place, settlement: Settlement, record: AttemptRecord, report: AttemptReport): Promise<boolean>;
  /** Moves a callback unattempted (`kind` says why); false: not stored, the caller still holds it. */
  move(at: Place, id: string, move: Move, kind: MoveKind): Promise<boolean>;
  /**
   * Something failed before a decision reached settle: the message goes back to its own queue, never
   * left unacked, a bounded number of times (settle/send-back.ts), then to P.dead as `unsettled`.
   * Never rejects.
   */
  sendBack(at: Omit<Place, 'bucket'>, why: string, id: string | undefined): Promise<void>;
  /**
   * A message the stopping worker will not attempt: nacked with requeue, at once, so another worker
   * takes it now, not after DRAIN_TIMEOUT. This is the one requeue the worker makes, once per message
   * per stop and only after its consumers are cancelled, so the broker never hands it back to this
   * worker. It needs no count of ours (return-bound.ts): the message was decoded and never attempted,
   * so it cannot be what stops a worker, and a worker that dies holding it is counted by the broker on
   * every version (docs/operations.md#graceful-shutdown). Never throws.
   */
  giveBack(at: Omit<Place, 'bucket'>): void;
}

/** A message's own queue, where it goes back when it cannot be settled, and P.dead past the bound. */
export function returnRoute(names: TopologyNames, lane: Lane): ReturnRoute {
  const queue =
    lane === 'slow'
      ? names.slowQueue
      : lane.startsWith('o')
        ? (names.orderedQueues[Number(lane.slice(1))] ?? names.workQueue)
        : (names.workQueues[Number(lane)] ?? names.workQueue);
  return { queue, deadQueue: names.deadQueue };
}

export interface BrokerEffectsDeps {
  names: TopologyNames;
  mode: DelayMode;
  logger: Logger;
  observer: PipelineObserver;
  /** Confirm timeout and topology redeclare for settle (see SettleContext). */
  settle: Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'>;
  /** EVENTS=durable: each outcome's event is stored before its message is settled. */
  durableEvents?: DurableEvents | undefined;
  /** The worker is stopping: waits that hold a message are cut short. */
  stopping: AbortSignal;
  /** Whether a channel closed: the broker has requeued its unacked messages already. */
  isClosed(channel: ConfirmChannel): boolean;
}

/** The effects on the broker, through amqplib (settle/). */
export class BrokerEffects implements MessageEffects {
  /** Made once: settle's context is made for every message. */
  private readonly onFallback = (fallback: SettleFallback): void => this.fallback(fallback);

  constructor(private readonly deps: BrokerEffectsDeps) {}

  async settle(
    { channel, message, bucket, orderBucket, beforeAck }: Place,
    settlement: Settlement,
    record: AttemptRecord,
    report: AttemptReport,
  ): Promise<boolean> {
    const { logger, observer } = this.deps;
    const settleWith = this.context(channel, message, bucket, record.id, orderBucket, beforeAck);
    settleWith.storeEvent = this.deps.durableEvents?.forReport(channel, report);
    settleWith.onEventLost = (error, final) => this.eventLost(report, error, final);
    if (!(await settle(settlement, record, settleWith))) return false;
    if (settlement.kind === 'dead') {
      const target = report.kind === 'invalid' ? undefined : report.target;
      logger.info(
        { id: record.id, target, reason: settlement.reason, attempts: record.attempts, status: record.lastStatus, error: record.lastError },
        'callback dead-lettered',
      );
    }
    observer.reported(report);
    return true;
  }

  async move({ channel, message, bucket, orderBucket, beforeAck }: Place, id: string, move: Move, kind: MoveKind): Promise<boolean> {
    const moved = await settle(move, { id }, this.context(channel, message, bucket, id, orderBucket, beforeAck));
    if (moved) this.deps.observer.moved(kind);
    return moved;
  }

  async sendBack({ channel, message, lane }: Omit<Place, 'bucket'>, why: string, id: string | undefined): Promise<void> {
    const wait = {
      slowAfterMs: this.deps.settle.confirmTimeoutMs ?? 10_000,
      onSlow: (error: Error) => this.slowConfirm(id, 'requeue', error),
    };
    try {
      const result = await sendBack(channel, message, returnRoute(this.deps.names, lane), why, wait, id, this.deps.stopping);
      if (result !== 'returned')
        this.deps.logger.error({ id, result }, 'a message sent back too often, or not stored back: parked in P.dead as unsettled');
    } catch {
      // The channel closed: the broker has requeued it already.
    }
  }

  giveBack({ channel, message }: Omit<Place, 'bucket'>): void {
    try {
      if (!this.deps.isClosed(channel)) channel.nack(message, false, true);
    } catch {
      // The channel closed meanwhile: the broker has requeued the message.
    }
  }

  /** Settle's context: the message, its channel and route, and where settle reports. */
  private context(
    channel: ConfirmChannel,
    message: ConsumeMessage,
    bucket: number,
    id: string,
    orderBucket?: number,
    beforeAck?: Place['beforeAck'],
  ): SettleContext {
    const { names, mode, observer, stopping, settle: settleSettings } = this.deps;
    // Spelled out, not spread: this object is made for every message, and a literal of fixed shape costs far less.
    return {
      storeEvent: undefined,
      channel,
      message,
      names,
      mode,
      bucket,
      orderBucket,
      beforeAck,
      onConfirm: observer.confirmed,
      onFallback: this.onFallback,
      stopping,
      confirmTimeoutMs: settleSettings.confirmTimeoutMs,
      redeclare: settleSettings.redeclare,
      onEventLost: undefined,
      onSlowConfirm: (kind, error) => this.slowConfirm(id, kind, error),
    };
  }

  /** A copy waits for a definite confirm; a late one is logged once (a blocked connection). */
  private slowConfirm(id: string | undefined, kind: string, error: Error): void {
    this.deps.logger.warn(
      { id, kind, err: error.message },
      "a copy is not confirmed yet (is the connection blocked by a broker alarm?); waiting for the broker's answer",
    );
  }

  /**
   * An outcome's event the broker did not store: its callback was settled all the same (settle/settle.ts),
   * and this line, with the event's facts, is what remains of it (docs/events-and-history.md).
   */
  private eventLost(report: AttemptReport, error: Error, final: boolean): void {
    const outcome = 'decision' in report ? report.decision.kind : report.kind;
    const facts = {
      id: report.id,
      report: report.kind,
      outcome,
      attempt: 'attempt' in report ? report.attempt : undefined,
      code: (error as { code?: string }).code,
      err: error.message,
    };
    if (final) this.deps.logger.error(facts, 'an outcome event was not stored; the callback was settled without it');
    else this.deps.logger.warn(facts, 'a retry-scheduled event was not stored; the retry itself was');
  }

  private fallback({ id, kind, cause, error }: SettleFallback): void {
    const { logger } = this.deps;
    if (kind === 'hold')
      return void logger.warn(
        { id, cause, err: error.message },
        "could not hold a paused target's callback: it goes back to its queue (a bounded number of times, then P.dead as unsettled)",
      );
    logger.error(
      { id, kind, cause, err: error.message },
      'could not store a copy: the message was rejected, for the broker to dead-letter to P.dead',
    );
    this.deps.observer.settleFallback(kind, cause);
  }
}
