import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { Logger } from '../logger.js';
import { FairShare } from '../isolation/fair-share.js';
import type { HealthState, Transition } from '../isolation/health.js';
import { targetOf, type AttemptKind, type Effects, type TargetIsolation, type TargetKey } from '../isolation/target-isolation.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import type { RetryPolicies } from '../policy/message-policy.js';
import type { DelayMode } from '../topology/delay-mode.js';
import { laneBucket } from '../topology/lanes.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { AttemptDeadline } from './attempt-deadline.js';
import { decode, type Delivery } from './decode.js';
import type { Decider } from './decide.js';
import { deliver, type DeliverOptions } from './deliver.js';
import { settle, type AttemptRecord, type SettleContext, type SettleFallback, type StoreEvent } from './settle.js';
import type { DurableEvents } from '../events/durable-events.js';
import type { PipelineObserver } from './observer.js';
import type { Tracing } from '../tracing/tracing.js';
import type { ControlView } from '../control/control-state.js';
import { moveTo } from '../control/move-held.js';

/** The queue a message was consumed from: a work lane's index, or `slow` (the drained slow lane). */
export type Lane = string;

/** The `error` of an attempt failed fast because its target's circuit is open: no request was made. */
export const CIRCUIT_OPEN = 'circuit open';

export interface PipelineDeps {
  names: TopologyNames;
  mode: DelayMode;
  maxPayloadBytes: number;
  /** The named retry policies (RETRY_POLICIES_FILE) decode resolves a callback's `policy` with. */
  policies?: RetryPolicies;
  deliverOptions: DeliverOptions;
  decide: Decider;
  /** Absent when isolation is off: then messages are attempted in arrival order. */
  isolation: TargetIsolation<Job> | undefined;
  /** Deliveries in flight at most (PREFETCH). */
  capacity: number;
  targetKey: TargetKey;
  clock: () => number;
  logger: Logger;
  observer: PipelineObserver;
  /** Confirm timeout and topology redeclare for settle (see SettleContext). */
  settle?: Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'>;
  /** A span per attempt, when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing?: Tracing | undefined;
  /** EVENTS=durable: each outcome's event is stored before its message is settled. */
  durableEvents?: DurableEvents | undefined;
  /** The control stream's cancels and pauses, as this worker has read them (src/control/). */
  control?: ControlView | undefined;
}

/** A decoded message on its way: everything the later steps need, built once. */
export interface Job {
  message: ConsumeMessage;
  channel: ConfirmChannel;
  lane: Lane;
  delivery: Delivery;
  target: string;
  /** Its lane bucket: retries are routed back to its own lane. */
  bucket: number;
  /** Settles the promise `handle` returned for this message (with the error when settling failed). */
  finish: (error?: unknown) => void;
}

const unattempted = (id: string, attempts: number, lastError?: string): AttemptRecord => ({
  id,
  attempts,
  firstAttemptAt: undefined,
  lastAttemptAt: undefined,
  lastStatus: undefined,
  lastError,
});

/** Every job shares one key when isolation is off: one FIFO with `capacity` slots. */
const ALL = '';

/**
 * The per-message pipeline: decode → admit → deliver → decide → settle.
 *
 * `handle` decodes a message and hands it to the scheduler (target isolation's fair share, or one
 * FIFO when isolation is off), which starts attempts while the worker has free slots. A target whose
 * circuit is open gets its attempt failed fast instead. Each attempt frees its slot as soon as its
 * HTTP exchange ends, then its decision is settled. The returned promise settles once the message has
 * been settled (or abandoned because its channel closed); it rejects only when settling failed.
 */
export function createMessageHandler(deps: PipelineDeps) {
  const { names, mode, logger, clock, isolation, observer } = deps;
  const fifo = isolation ? undefined : new FairShare<Job>({ capacity: deps.capacity, perTarget: deps.capacity, initialPerTarget: deps.capacity, maxTargets: 1 });
  /** Channels that closed: the broker has requeued their unacked messages, so their jobs must not run. */
  const closed = new WeakSet<ConfirmChannel>();
  const contextOf = (channel: ConfirmChannel, message: ConsumeMessage, bucket: number, storeEvent?: StoreEvent): SettleContext => ({
    storeEvent,
    channel,
    message,
    names,
    mode,
    bucket,
    onConfirm: observer.confirmed,
    onFallback,
    ...deps.settle,
  });

  function onFallback({ id, kind, cause, error }: SettleFallback): void {
    logger.error({ id, kind, cause, err: error.message }, 'could not store a copy: the message was rejected, for the broker to dead-letter to P.dead');
    observer.settleFallback(kind, cause);
  }

  function handle(message: ConsumeMessage, channel: ConfirmChannel, lane: Lane): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      observer.inFlight(1);
      const done = (error?: unknown): void => {
        observer.inFlight(-1);
        if (error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      const decoded = decode(message, deps.maxPayloadBytes, deps.policies);
      if (!decoded.ok) {
        settle({ kind: 'dead', reason: 'invalid', why: decoded.error }, unattempted(decoded.id, decoded.attempt - 1, decoded.error), contextOf(channel, message, 0, deps.durableEvents?.forInvalid(channel, decoded.id, decoded.error))).then((stored) => {
          if (stored) {
            logger.info({ id: decoded.id, reason: 'invalid', error: decoded.error }, 'callback dead-lettered');
            observer.invalid(decoded.id, decoded.error);
          }
          done();
        }, done);
        return;
      }
      const { delivery } = decoded;
      if (deps.control?.isCancelled(delivery.id, message.properties.headers)) return void parkCanceled(message, channel, lane, delivery).then(() => done(), done);
      // A paused target: the callback waits in P.paused, no attempt made nor counted (src/control/).
      if (deps.control?.isPaused(delivery.url.origin)) return void moveTo(channel, message, names.pausedQueue, delivery.id, deps.settle?.confirmTimeoutMs ?? 10_000).then(() => done(), done);
      const target = targetOf(delivery.url, deps.targetKey);
      let settled = false;
      const finish = (error?: unknown): void => {
        if (settled) return;
        settled = true;
        done(error);
      };
      const job: Job = { message, channel, lane, delivery, target, bucket: laneBucket(delivery.url.origin), finish };
      admit(job);
    });
  }

  /** A cancelled callback is parked in P.dead as `canceled` without an attempt; its event says `canceled`. */
  async function parkCanceled(message: ConsumeMessage, channel: ConfirmChannel, lane: Lane, delivery: Delivery): Promise<void> {
    const decision = { kind: 'dead', reason: 'canceled', why: 'canceled by a cancel marker' } as const;
    const outcome: DeliveryOutcome = { error: 'canceled', durationMs: 0 };
    const report = { id: delivery.id, url: delivery.callback.url, target: targetOf(delivery.url, deps.targetKey), lane, attempt: delivery.attempt - 1, outcome, decision, nextAttemptAt: undefined };
    const record = { ...unattempted(delivery.id, delivery.attempt - 1), firstAttemptAt: delivery.firstAttemptAt, policy: delivery.policy };
    const context = contextOf(channel, message, laneBucket(delivery.url.origin), deps.durableEvents?.forAttempt(channel, report));
    if (!(await settle(decision, record, context))) return;
    logger.info({ id: delivery.id, target: report.target, reason: 'canceled', attempts: record.attempts }, 'callback dead-lettered');
    observer.attempted(report);
  }

  /** Step 2: queue the job for a slot, or fail it fast when its target's circuit is open. */
  function admit(job: Job): void {
    if (!isolation) fifo?.push(ALL, job);
    else if (isolation.offer(job.target, job) === 'fail-fast') {
      void failFast(job);
      return;
    }
    pump();
  }

  /** Starts attempts while there are free slots and waiting jobs. */
  function pump(): void {
    for (;;) {
      const next = isolation ? isolation.next() : fifo?.next();
      if (!next) return;
      const kind: AttemptKind = 'kind' in next ? (next as { kind: AttemptKind }).kind : 'attempt';
      if (closed.has(next.item.channel)) {
        if (isolation) isolation.abandon(next.target, kind);
        else fifo?.done(ALL, 'none');
        next.item.finish();
        continue;
      }
      void attempt(next.item, kind);
    }
  }

  /** Step 3: one HTTP attempt; its slot is freed the moment it ends, before the settle. */
  async function attempt(job: Job, kind: AttemptKind): Promise<void> {
    const { target } = job;
    const startedAt = clock();
    const deadline = new AttemptDeadline(
      job.delivery.policy?.timeoutMs ?? deps.deliverOptions.timeoutMs,
      isolation && { afterMs: isolation.slowThresholdMs, onSlow: () => apply(isolation.overdue(target, clock())) },
    );
    // The receiver gets the attempt span's context, or without tracing the published one (deliver's default).
    const span = deps.tracing?.startAttempt(job.delivery);
    // deliver never throws; the catch only guarantees the slot is freed whatever happens.
    const outcome: DeliveryOutcome = await deliver(job.delivery, deps.deliverOptions, deadline, span?.context).catch((error: unknown) => ({ error: String(error), durationMs: clock() - startedAt }));
    const wasOverdue = deadline.finish();
    if (isolation) apply(isolation.complete(target, kind, outcome, clock(), wasOverdue));
    else fifo?.done(ALL, 'none');
    pump();
    await conclude(job, outcome, startedAt, span);
  }

  /** An attempt of a target whose circuit is open: counted, recorded, no request made. */
  function failFast(job: Job): Promise<void> {
    return conclude(job, { error: CIRCUIT_OPEN, durationMs: 0 }, clock());
  }

  /** Steps 4 and 5: decide what the outcome means, and settle it. */
  async function conclude(job: Job, outcome: DeliveryOutcome, startedAt: number, span = deps.tracing?.startAttempt(job.delivery)): Promise<void> {
    const { delivery, target, lane, finish } = job;
    try {
      const { decision, record } = deps.decide(delivery, outcome, startedAt);
      span?.end(outcome, decision, outcome.error === CIRCUIT_OPEN);
      if (logger.isLevelEnabled('debug')) {
        logger.debug({ id: delivery.id, target, lane, attempt: delivery.attempt, status: outcome.status, error: outcome.error, ms: outcome.durationMs, decision: decision.kind }, 'attempt');
      }
      const nextAttemptAt = decision.kind === 'retry' ? new Date(clock() + decision.delayMs).toISOString() : undefined;
      const report = { id: delivery.id, url: delivery.callback.url, target, lane, attempt: delivery.attempt, outcome, decision, nextAttemptAt };
      const storeEvent = deps.durableEvents?.forAttempt(job.channel, report);
      // false: no copy could be stored and the original went to P.dead by rejection (logged in onFallback).
      if (!(await settle(decision, record, contextOf(job.channel, job.message, job.bucket, storeEvent)))) return finish();
      if (decision.kind === 'dead') {
        logger.info({ id: delivery.id, target, reason: decision.reason, attempts: record.attempts, status: record.lastStatus, error: record.lastError }, 'callback dead-lettered');
      }
      observer.attempted(report);
      finish();
    } catch (error) {
      finish(error);
    }
  }

  /** Logs a health transition (one line each) and fails fast what an opened circuit took out of the queue. */
  function apply(effects: Effects<Job>): void {
    const transition: Transition | undefined = effects.transition;
    if (transition) {
      if (!transition.shared) deps.control?.broadcastHealth?.(transition.target, transition.to);
      logger.warn({ ...transition }, transition.to === 'degraded' ? 'target degraded: circuit open, attempts fail fast but for probes' : 'target recovered: circuit closed');
      observer.transition(transition);
    }
    for (const job of effects.failFast) void failFast(job);
  }

  /** The channel closed: drop its waiting jobs (the broker has requeued them); running ones finish. */
  function channelClosed(channel: ConfirmChannel): void {
    closed.add(channel);
    const matches = (job: Job): boolean => job.channel === channel;
    const dropped = isolation ? isolation.drop(matches) : (fifo?.drop(matches).map(({ item }) => item) ?? []);
    for (const job of dropped) job.finish();
  }

  /** Another worker's circuit transition for `target`, read from P.control: taken as this worker's own. */
  function shareHealth(target: string, state: HealthState): void {
    if (isolation) apply(isolation.shareHealth(target, state, clock()));
  }

  return { handle, channelClosed, shareHealth };
}
