import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { AutoPause } from '../control/auto-pause.js';
import type { ControlView } from '../control/control-state.js';
import type { DurableEvents } from '../events/durable-events.js';
import type { HealthState } from '../isolation/health.js';
import { circuitWait, type AttemptKind, type Effects, type ScheduleLeft, type Scheduler, type Source } from '../isolation/scheduler.js';
import { targetOf, type TargetKey } from '../isolation/target-isolation.js';
import type { Logger } from '../logger.js';
import { HEADER, readString } from '../message/headers.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import { decide, type Decision, type RetryPolicy } from '../policy/decide.js';
import type { Random } from '../policy/jitter.js';
import { delayWithinSchedule, scheduleLeftMs } from '../policy/retry-schedule.js';
import type { RetryPolicies } from '../policy/message-policy.js';
import type { DelayMode } from '../topology/delay-levels.js';
import { laneBucket, type TopologyNames } from '../topology/topology-names.js';
import type { AttemptSpan, Tracing } from '../tracing/tracing.js';
import { AttemptDeadline } from './attempt-deadline.js';
import { decode, type Decoded, type Delivery } from './decode.js';
import { deliver, type DeliverOptions } from './deliver.js';
import { CIRCUIT_OPEN, type AttemptReport, type Lane, type PipelineObserver, type TriedReport } from '../reports.js';
import { sendBack, type ReturnRoute } from '../settle/send-back.js';
import { settle, type AttemptRecord, type Settlement, type SettleContext, type SettleFallback, type StoreEvent } from '../settle/settle.js';

export type { Lane };

/** Everything the per-message path needs, built once when the worker starts. */
export interface PipelineContext {
  names: TopologyNames;
  mode: DelayMode;
  maxPayloadBytes: number;
  /** The worker's own retry policy, and the named ones a callback's `policy` field picks from. */
  retry: RetryPolicy;
  policies: RetryPolicies | undefined;
  deliver: DeliverOptions;
  /** Target isolation, or arrival order when ISOLATION=off: which waiting job gets the next slot. */
  scheduler: Scheduler<Job>;
  targetKey: TargetKey;
  clock: () => number;
  random: Random;
  logger: Logger;
  observer: PipelineObserver;
  /** Confirm timeout and topology redeclare for settle (see SettleContext). */
  settle: Pick<SettleContext, 'confirmTimeoutMs' | 'redeclare'>;
  /** A span per attempt, when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
  tracing?: Tracing | undefined;
  /** EVENTS=durable: each outcome's event is stored before its message is settled. */
  durableEvents?: DurableEvents | undefined;
  /** The control stream's cancels and pauses, as this worker has read them (src/control/). */
  control?: ControlView | undefined;
  /** AUTO_PAUSE_AFTER: failure streaks per origin that pause a target fleet-wide once long enough. */
  autoPause?: AutoPause | undefined;
  /**
   * How many unsettled messages a lane's consumer window holds beyond the line where what queues
   * behind them still comes in (negative: room left). Without it, a busy target's callbacks leave
   * their lane whatever its window holds.
   */
  laneExcess?: ((lane: Lane) => number) | undefined;
  /** LIMIT_HOLD_MAX in ms: a callback its limit would hold longer waits in the delay path instead. */
  limitHoldMs: number;
}

/** Step 1 → 2: a decoded message waiting for a slot. */
export interface Job {
  message: ConsumeMessage;
  channel: ConfirmChannel;
  lane: Lane;
  delivery: Delivery;
  target: string;
  /** `delivery.url.origin`, read once. */
  origin: string;
  /** Its lane bucket: retries are routed back to its own lane. */
  bucket: number;
  /** Settles the promise `handle` returned for this message (with the error when settling failed). */
  finish: (error?: unknown) => void;
}

/** Origins whose lane bucket is remembered at most. */
const BUCKET_CACHE = 10_000;

/** How often the worker looks for busy targets whose excess should leave their lanes. */
const SWEEP_EVERY_MS = 50;
/**
 * A callback stored in the delay path for its limit (LIMIT_HOLD_MAX, `limitHoldMs`) comes back after this
 * many holds at most, and is looked at again: a limit cleared meanwhile reaches it that soon.
 */
const LIMIT_DEFER_HOLDS = 3;

/** The share of the time since its last call that this process's event loop was busy (0–1). */
function loopUtilisation(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    return utilization;
  };
}

/** Step 3 → 4: what an attempt gave. */
interface Attempted {
  job: Job;
  outcome: DeliveryOutcome;
  startedAt: number;
  span: AttemptSpan | undefined;
}

/** Step 4 → 5: what to do with the message, and what its headers and reports record. */
export interface Verdict {
  decision: Decision;
  record: AttemptRecord;
}

/**
 * Step 4, pure: the retry policy's decision on an attempt's outcome, and the record a retry or
 * dead-letter copy carries. A callback with a named policy is decided by it, any other by `retry`.
 */
export function verdictOf(delivery: Delivery, outcome: DeliveryOutcome, startedAtMs: number, retry: RetryPolicy, nowMs: number, random: Random): Verdict {
  const decision = decide(outcome, delivery.attempt, delivery.policy?.retry ?? retry, nowMs, random);
  const startedAt = new Date(startedAtMs).toISOString();
  const record: AttemptRecord = {
    id: delivery.id,
    attempts: delivery.attempt,
    firstAttemptAt: delivery.firstAttemptAt ?? startedAt,
    lastAttemptAt: startedAt,
    lastStatus: outcome.status,
    lastError: decision.kind === 'ack' ? undefined : (outcome.error ?? decision.why),
    policy: delivery.policy,
    // A circuit held this attempt from when it came due until now: its schedule's end comes that much sooner.
    heldMs: heldAfter(delivery, startedAtMs),
  };
  return { decision, record };
}

/** What circuits have held a callback past its attempts' due times once this attempt started (ms; undefined: never). */
function heldAfter({ heldMs, heldSince }: Delivery, startedAtMs: number): number | undefined {
  const held = (heldMs ?? 0) + (heldSince === undefined ? 0 : Math.max(0, startedAtMs - heldSince));
  return held > 0 ? held : undefined;
}

/** The last error of a callback dead-lettered when its schedule ran out while its circuit was open. */
const RAN_OUT = `${CIRCUIT_OPEN}: the target failed every request until the retry schedule ended`;

/** A failed attempt past the end of its callback's schedule, its target failing throughout (`ranOut`): no retry, P.dead as `exhausted`. */
const ranOutVerdict = ({ record }: Verdict): Verdict => ({ decision: { kind: 'dead', reason: 'exhausted', why: RAN_OUT }, record: { ...record, lastError: RAN_OUT } });

/**
 * The per-message path, top to bottom: prepare (decode → admit) → attempt → conclude (decide →
 * settleAndReport). Every path ends in settleAndReport: an attempt's decision, and the parks and
 * holds of messages never attempted (invalid, canceled, paused target).
 *
 * `handle` decodes a message (1) and admits it (2): a cancelled callback is parked and a paused
 * target's held; any other goes to the scheduler, which starts attempts while the worker has free
 * slots. A busy target's callback moves to the overflow queue instead (once) while its lane's window
 * is over its line, and one whose target's
 * circuit is open is deferred without spending its attempt until it waited as long as the attempt
 * would have taken, then attempted. Each
 * attempt (3) frees its slot as soon as its HTTP exchange ends; then its outcome is decided (4) and
 * the decision settled on the message's own channel (5). The promise `handle` returns settles once the
 * message has been settled (or dropped because its channel closed); it rejects only when settling
 * failed, and the broker then redelivers the message.
 */
export function createPipeline(context: PipelineContext) {
  const { names, mode, logger, clock, scheduler, observer } = context;
  /** Channels that closed: the broker has requeued their unacked messages, so their jobs must not run. */
  const closed = new WeakSet<ConfirmChannel>();
  /** The worker is stopping: no attempt starts any more, and waits that hold a message are cut short. */
  const stopping = new AbortController();
  /** The consumers are cancelled and what waited for a slot went back: a job that would wait now goes back at once. */
  let givenBack = false;
  /** The pending wake of a target held back by its limit: one timer, for the soonest. */
  let wake: { at: number; timer: NodeJS.Timeout } | undefined;
  // Busy targets' waiting callbacks leave their lanes for the overflow queue (target-isolation.ts).
  const loopBusy = loopUtilisation();
  /** Moves to the overflow queue under way, per lane: they leave its window once acked. */
  const moving = new Map<Lane, number>();
  const { laneExcess } = context;
  if (laneExcess) scheduler.watchWindows?.({ of: (job) => job.lane, excess: (lane) => Math.max(0, laneExcess(lane as Lane) - (moving.get(lane as Lane) ?? 0)) });
  const sweeper = setInterval(() => {
    // A wait for a limit past LIMIT_HOLD_MAX would meet the broker's consumer timeout: such callbacks wait in the delay path instead.
    for (const { item, delayMs } of scheduler.outwaiting?.(clock(), context.limitHoldMs, LIMIT_DEFER_HOLDS * context.limitHoldMs) ?? []) void deferForLimit(item, delayMs);
    for (const job of scheduler.sweep(clock(), loopBusy())) void overflow(job);
  }, SWEEP_EVERY_MS);
  sweeper.unref();
  /** Lane buckets of the origins seen lately (a hash of the origin's bytes each, else); cleared when it grows past BUCKET_CACHE. */
  const buckets = new Map<string, number>();
  function bucketOf(origin: string): number {
    let bucket = buckets.get(origin);
    if (bucket === undefined) {
      if (buckets.size >= BUCKET_CACHE) buckets.clear();
      bucket = laneBucket(origin);
      buckets.set(origin, bucket);
    }
    return bucket;
  }

  /** Step 1: message → job, or straight to P.dead (reason `invalid`) when it cannot be decoded. */
  function handle(message: ConsumeMessage, channel: ConfirmChannel, lane: Lane): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      observer.inFlight(1);
      let finished = false;
      const finish = (error?: unknown): void => {
        if (finished) return;
        finished = true;
        observer.inFlight(-1);
        if (error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      let job: Job;
      try {
        const decoded = decode(message, context.maxPayloadBytes, context.policies);
        if (!decoded.ok) return void parkInvalid(decoded, message, channel).then(() => finish(), finish);
        const { delivery } = decoded;
        // URL.origin is serialised anew on every read: read once per message, its bucket hashed once per origin.
        const origin = delivery.url.origin;
        job = { message, channel, lane, delivery, origin, target: context.targetKey === 'origin' ? origin : targetOf(delivery.url, context.targetKey), bucket: bucketOf(origin), finish };
      } catch (error) {
        return requeue({ message, channel, lane, finish }, error);
      }
      admit(job);
    });
  }

  /**
   * Something failed before a decision reached settle: the message goes back to its own queue, never
   * left unacked, a bounded number of times (settle/send-back.ts), then to P.dead as `unsettled`.
   */
  function requeue({ message, channel, lane, finish, delivery }: Pick<Job, 'message' | 'channel' | 'lane' | 'finish'> & { delivery?: Delivery }, error: unknown): void {
    const err = error instanceof Error ? error.message : String(error);
    logger.error({ err, id: delivery?.id }, 'a message failed before it was settled; it goes back to its queue');
    sendBack(channel, message, returnRoute(lane), err, confirmWait(delivery?.id, 'requeue'), delivery?.id, stopping.signal).then(
      (result) => {
        if (result !== 'returned') logger.error({ id: delivery?.id, result }, 'a message sent back too often, or not stored back: parked in P.dead as unsettled');
        finish(error);
      },
      // The channel closed: the broker has requeued it already.
      () => finish(error),
    );
  }

  /** A message's own queue, where it goes back when it cannot be settled, and P.dead past the bound. */
  function returnRoute(lane: Lane): ReturnRoute {
    const queue = lane === 'slow' ? names.slowQueue : (names.workQueues[Number(lane)] ?? names.workQueue);
    return { queue, deadQueue: names.deadQueue };
  }

  /** A copy waits for a definite confirm; a late one is logged once (a blocked connection). */
  function confirmWait(id: string | undefined, kind: string) {
    return { slowAfterMs: context.settle.confirmTimeoutMs ?? 10_000, onSlow: (error: Error) => onSlowConfirm(id, kind, error) };
  }

  function onSlowConfirm(id: string | undefined, kind: string, error: Error): void {
    logger.warn({ id, kind, err: error.message }, 'a copy is not confirmed yet (is the connection blocked by a broker alarm?); waiting for the broker\'s answer');
  }

  /**
   * Step 2: a cancelled callback is parked and a paused target's callback held, neither attempted;
   * any other waits for a slot, moves to the overflow queue while its target is busy, or is deferred
   * while its target's circuit is open.
   */
  function admit(job: Job): void {
    const { control } = context;
    const done = (): void => job.finish();
    if (control?.isCancelled(job.delivery.id, job.message.properties.headers)) void parkCanceled(job).then(done, job.finish);
    else if (control?.isPaused(job.origin)) void hold(job).then(done, job.finish);
    else if (ranOut(job)) void expire(job);
    else offer(job, sourceOf(job));
  }

  function offer(job: Job, source: Source): void {
    if (givenBack) return giveBack(job);
    const offered = scheduler.offer(job.target, job, source, clock());
    if (offered === 'circuit-open') void circuitOpen(job);
    else if (offered === 'overflow') void overflow(job);
    else pump();
  }

  /**
   * A busy target's callback leaves its lane for the overflow queue, unattempted, so the callbacks
   * queued behind it are reached now. One that cannot be moved is attempted here after all.
   */
  async function overflow(job: Job): Promise<void> {
    moving.set(job.lane, (moving.get(job.lane) ?? 0) + 1);
    let moved: boolean;
    try {
      const startedAt = clock();
      moved = await settle({ kind: 'move', queue: names.slowQueue }, { id: job.delivery.id }, moveContext(job));
      if (moved) scheduler.moveTook(clock() - startedAt);
    } catch (error) {
      // The channel is gone: the broker redelivers the message.
      return job.finish(error);
    } finally {
      const left = (moving.get(job.lane) ?? 1) - 1;
      if (left > 0) moving.set(job.lane, left);
      else moving.delete(job.lane);
    }
    if (!moved) return offer(job, 'overflow');
    observer.moved('overflow');
    job.finish();
  }

  /**
   * A callback its target's limit holds back for longer than LIMIT_HOLD_MAX leaves the worker through the
   * delay path, its attempt unchanged, and comes back about when its turn would have come; acked once the
   * copy is confirmed. One that cannot be stored waits here after all.
   */
  async function deferForLimit(job: Job, delayMs: number): Promise<void> {
    if (givenBack) return giveBack(job);
    try {
      if (await settle({ kind: 'move', delayMs, headers: {} }, { id: job.delivery.id }, moveContext(job))) {
        observer.moved('limited');
        return job.finish();
      }
    } catch (error) {
      return job.finish(error);
    }
    offer(job, sourceOf(job));
  }

  /** Settle's context for a move of `job`: a late confirm is logged like any copy's. */
  function moveContext(job: Job): SettleContext {
    const settleWith = settleContext(job.channel, job.message, job.bucket);
    settleWith.onSlowConfirm = (kind, error) => onSlowConfirm(job.delivery.id, kind, error);
    return settleWith;
  }

  /**
   * Step 3 for a target whose circuit is open: the callback is deferred through the delay path, its
   * attempt kept, until the attempt would have ended (circuitWait). Then it is owed its request, made
   * as soon as its target has room (a forced one, or one whose deferral cannot be stored, at once): no
   * attempt is ever counted without a request; one at an attempt number the target has not answered
   * here yet gets its request at once (offerOwed). But the schedule keeps its time: once the rest of it
   * would have ended with every attempt timing out, the target failing throughout, the callback is
   * dead-lettered (`expire`), no later than `ISOLATION=off` would have.
   */
  async function circuitOpen(job: Job): Promise<void> {
    if (givenBack) return giveBack(job);
    const { delivery } = job;
    const deferrals = Number(job.message.properties.headers?.[HEADER.deferrals]);
    const timeoutMs = timeoutOf(delivery);
    const left = scheduleOf(delivery);
    const wait = circuitWait(delivery.heldSince, Number.isInteger(deferrals) && deferrals > 0 ? deferrals : 0, clock(), timeoutMs, left);
    if (wait.expired && failedThroughout(job, wait.giveUpAt, left.leftMs)) return expire(job);
    if (scheduler.offerOwed(job.target, job, sourceOf(job), clock(), wait, delivery.attempt) === 'queued') return pump();
    const deferral = { [HEADER.heldSince]: new Date(wait.defer.heldSince).toISOString(), [HEADER.deferrals]: wait.defer.deferrals };
    try {
      if (await settle({ kind: 'move', delayMs: wait.defer.delayMs, headers: deferral }, { id: job.delivery.id }, moveContext(job))) {
        observer.moved('deferred');
        return job.finish();
      }
    } catch (error) {
      return job.finish(error);
    }
    if (givenBack) return giveBack(job);
    scheduler.offerOwed(job.target, job, sourceOf(job), clock(), { owed: true, forced: true, mayBorrow: false });
    pump();
  }

  const sourceOf = (job: Job): Source => (job.lane === 'slow' ? 'overflow' : 'lane');
  // A callback with a named policy follows it; any other, the worker's defaults.
  const timeoutOf = (delivery: Delivery): number => delivery.policy?.timeoutMs ?? context.deliver.timeoutMs;
  const retryOf = (delivery: Delivery): RetryPolicy => delivery.policy?.retry ?? context.retry;

  /** What is left of a callback's schedule from its attempt about to be made, and what circuits held it so far. */
  function scheduleOf(delivery: Delivery): ScheduleLeft {
    const retry = retryOf(delivery);
    return { leftMs: scheduleLeftMs(retry.schedule, retry.maxAttempts, delivery.attempt, timeoutOf(delivery)), heldMs: delivery.heldMs ?? 0 };
  }

  /**
   * Whether the schedule ending at `endsAt` (`leftMs` after its attempt came due, less what circuits held
   * it) ran out with its target failing throughout: the target must have answered no request since the
   * remaining attempts would have begun with `ISOLATION=off` (a receiver's answer may depend on the
   * callback: a retry that finds its work done answers at once where the first attempt hung), failed
   * one when its last attempt would have been made, a timeout before the end, and failed the latest
   * request it got at each attempt number the callback has left (an answer may depend on the attempt:
   * a receiver whose first attempts hang and whose second ones succeed is not failing at attempt 2).
   */
  function failedThroughout(job: Job, endsAt: number, leftMs: number, fromAttempt = job.delivery.attempt): boolean {
    const attempts = { from: fromAttempt, to: retryOf(job.delivery).maxAttempts };
    return clock() >= endsAt && scheduler.failedThroughout !== undefined && scheduler.failedThroughout(job.target, endsAt - leftMs, endsAt - timeoutOf(job.delivery), attempts);
  }

  /**
   * A callback a circuit held (now, or at earlier attempts) whose schedule ran out with its target
   * failing throughout (`failedThroughout`), its attempt due now. Asked before a callback is offered, so
   * that an open circuit does not make it a probe past its end. One never held has its whole rest ahead.
   */
  function ranOut(job: Job): boolean {
    const { delivery } = job;
    if (!scheduler.failedThroughout || (delivery.heldSince === undefined && !delivery.heldMs)) return false;
    const { leftMs, heldMs } = scheduleOf(delivery);
    return failedThroughout(job, Math.min(delivery.heldSince ?? clock(), clock()) + leftMs - heldMs, leftMs);
  }

  /**
   * The retry of a callback circuits held (`record.heldMs`), decided against its schedule's end, worked
   * out once: its retry would come due after that end, its target failing throughout, so no retry is
   * made (a probe, or an owed request, that failed past it); or, held longer than the rest of its
   * schedule, its retry comes back at that end, not a whole delay after it (delayWithinSchedule):
   * parked then if its target is still failing throughout, as `ISOLATION=off` would park it by then;
   * attempted if not. Any other verdict is left as it is.
   */
  function heldRetry(job: Job, verdict: Verdict): Verdict {
    const { decision, record } = verdict;
    if (decision.kind !== 'retry' || !record.heldMs) return verdict;
    const { leftMs } = scheduleOf({ ...job.delivery, attempt: decision.attempt });
    if (failedThroughout(job, clock() + decision.delayMs + leftMs - record.heldMs, leftMs, decision.attempt)) return ranOutVerdict(verdict);
    const delayMs = delayWithinSchedule(decision.delayMs, leftMs, record.heldMs);
    return delayMs === decision.delayMs ? verdict : { decision: { ...decision, delayMs }, record };
  }

  /**
   * A callback whose target's circuit stayed open to the end of its schedule's time, the target still
   * failing: parked in P.dead as `exhausted`, where `ISOLATION=off` would have parked it by now after
   * as many timeouts, without another request to a receiver that does not answer.
   */
  async function expire(job: Job): Promise<void> {
    try {
      await settleAndReport(job, { kind: 'dead', reason: 'exhausted', why: RAN_OUT }, ...unattempted(job, 'expired', RAN_OUT));
      job.finish();
    } catch (error) {
      job.finish(error);
    }
  }

  /** A message that is not a valid callback: parked in P.dead as `invalid`, and the worker carries on. */
  async function parkInvalid({ id, attempt, error }: Extract<Decoded, { ok: false }>, message: ConsumeMessage, channel: ConfirmChannel): Promise<void> {
    const record: AttemptRecord = { id, attempts: attempt - 1, firstAttemptAt: undefined, lastAttemptAt: undefined, lastStatus: undefined, lastError: error };
    await settleAndReport({ message, channel, bucket: 0 }, { kind: 'dead', reason: 'invalid', why: error }, record, { kind: 'invalid', id, error });
  }

  /** A cancelled callback is parked in P.dead as `canceled` without an attempt; its event says `canceled`. */
  async function parkCanceled(job: Job): Promise<void> {
    await settleAndReport(job, { kind: 'dead', reason: 'canceled', why: 'canceled by a cancel marker' }, ...unattempted(job, 'canceled'));
  }

  /**
   * A paused target's callback waits in P.paused, its attempt count unchanged (src/control/). Its
   * `paused` event is for this first hold only: the recirculation through P.paused.check (control
   * reader) moves it without one.
   */
  async function hold(job: Job): Promise<void> {
    await settleAndReport(job, { kind: 'hold', queue: names.pausedQueue, returnTo: returnRoute(job.lane) }, ...unattempted(job, 'held'));
  }

  /** The record and report of a callback parked or held before an attempt: the attempts made before count. */
  function unattempted({ lane, delivery, target }: Job, kind: 'canceled' | 'held' | 'expired', why?: string): [AttemptRecord, AttemptReport] {
    const attempts = delivery.attempt - 1;
    const record: AttemptRecord = { id: delivery.id, attempts, firstAttemptAt: delivery.firstAttemptAt, lastAttemptAt: undefined, lastStatus: undefined, lastError: why, policy: delivery.policy };
    const reported = { id: delivery.id, url: delivery.callback.url, target, lane, attempt: attempts };
    return [record, kind === 'expired' ? { kind, ...reported, why: why ?? '' } : { kind, ...reported }];
  }

  /** Starts attempts while there are free slots and waiting jobs, until the worker stops. */
  function pump(): void {
    if (stopping.signal.aborted) return;
    for (let next = scheduler.next(clock()); next; next = scheduler.next(clock())) {
      if (closed.has(next.item.channel)) {
        scheduler.abandon(next.target, next.kind);
        next.item.finish();
      } else {
        const job = next.item;
        void attempt(job, next.kind).then(conclude, (error: unknown) => requeue(job, error));
      }
    }
    wakeForLimits();
  }

  /** A target held back by its limit (docs/limits.md) is pumped again when its limit lets a request go. */
  function wakeForLimits(): void {
    const inMs = scheduler.wakeInMs?.(clock());
    if (inMs === undefined) return;
    const at = clock() + inMs;
    if (wake !== undefined && wake.at <= at) return;
    clearTimeout(wake?.timer);
    const timer = setTimeout(() => {
      wake = undefined;
      pump();
    }, Math.max(1, inMs));
    timer.unref();
    wake = { at, timer };
  }

  /** Step 3: one HTTP attempt; its slot is freed the moment it ends, before the decision is settled. */
  async function attempt(job: Job, kind: AttemptKind): Promise<Attempted> {
    const { target, delivery } = job;
    const startedAt = clock();
    let outcome: DeliveryOutcome = { error: 'not attempted', durationMs: 0 };
    let overdue = false;
    try {
      // The receiver gets the attempt span's context, or without tracing the published one (deliver's default).
      const span = context.tracing?.startAttempt(delivery);
      const slowAfterMs = scheduler.slowThresholdMs;
      const deadline = new AttemptDeadline(
        timeoutOf(delivery),
        slowAfterMs === undefined ? undefined : { afterMs: slowAfterMs, onSlow: () => apply(scheduler.overdue(target, clock(), kind, delivery.attempt)) },
      );
      // deliver never throws; the catch is a guarantee, not a path.
      outcome = await deliver(delivery, context.deliver, deadline, span?.context).catch((error: unknown) => ({ error: String(error), durationMs: clock() - startedAt }));
      overdue = deadline.finish();
      return { job, outcome, startedAt, span };
    } finally {
      // The slot is freed whatever happened; a throw above sends the message back to its queue (pump).
      apply(scheduler.complete(target, kind, outcome, clock(), { wasOverdue: overdue, attempt: delivery.attempt }));
      pump();
    }
  }

  /** Steps 4 and 5: decide what the outcome means, and settle it on the message's channel. */
  async function conclude({ job, outcome, startedAt, span }: Attempted): Promise<void> {
    const { delivery, target, lane, finish } = job;
    let settling = false;
    try {
      const verdict = verdictOf(delivery, outcome, startedAt, context.retry, clock(), context.random);
      const { decision, record } = heldRetry(job, verdict);
      if (logger.isLevelEnabled('debug')) {
        logger.debug({ id: delivery.id, target, lane, attempt: delivery.attempt, status: outcome.status, error: outcome.error, ms: outcome.durationMs, decision: decision.kind }, 'attempt');
      }
      const nextAttemptAt = decision.kind === 'retry' ? new Date(clock() + decision.delayMs).toISOString() : undefined;
      const report: TriedReport = { kind: 'attempt', id: delivery.id, url: delivery.callback.url, target, lane, attempt: delivery.attempt, outcome, decision, nextAttemptAt };
      span?.end(report);
      settling = true;
      if (!(await settleAndReport(job, decision, record, report))) return finish();
      if (context.autoPause?.record(job.origin, decision.kind === 'ack', clock())) {
        logger.warn({ origin: job.origin }, 'target paused: every attempt failed for AUTO_PAUSE_AFTER; resume it with callback-relay target resume');
        context.control?.pauseTarget?.(job.origin);
      }
      finish();
    } catch (error) {
      // Settle failing means the channel is gone (the broker redelivers) or the message went back already.
      if (settling) finish(error);
      else requeue(job, error);
    }
  }

  /**
   * Step 5 for every path: carry out the settlement on the message's channel (with EVENTS=durable,
   * its event stored as settle orders it), then log a dead letter and report. False when no copy
   * could be stored and the original was rejected to P.dead instead (logged in onFallback): nothing
   * is reported then. Throws when the channel is gone.
   */
  async function settleAndReport({ channel, message, bucket }: Pick<Job, 'message' | 'channel' | 'bucket'>, settlement: Settlement, record: AttemptRecord, report: AttemptReport): Promise<boolean> {
    const storeEvent = context.durableEvents?.forReport(channel, report);
    const settleWith = settleContext(channel, message, bucket, storeEvent);
    settleWith.onEventLost = (error, final) => onEventLost(report, error, final);
    settleWith.onSlowConfirm = (kind, error) => onSlowConfirm(record.id, kind, error);
    if (!(await settle(settlement, record, settleWith))) return false;
    if (settlement.kind === 'dead') {
      const target = report.kind === 'invalid' ? undefined : report.target;
      logger.info({ id: record.id, target, reason: settlement.reason, attempts: record.attempts, status: record.lastStatus, error: record.lastError }, 'callback dead-lettered');
    }
    observer.reported(report);
    return true;
  }

  /** Step 5's context: the message, its channel and route, and where settle reports. */
  function settleContext(channel: ConfirmChannel, message: ConsumeMessage, bucket: number, storeEvent?: StoreEvent): SettleContext {
    // Spelled out, not spread: this object is made for every message, and a literal of fixed shape costs far less.
    return {
      storeEvent,
      channel,
      message,
      names,
      mode,
      bucket,
      onConfirm: observer.confirmed,
      onFallback,
      stopping: stopping.signal,
      confirmTimeoutMs: context.settle.confirmTimeoutMs,
      redeclare: context.settle.redeclare,
      onEventLost: undefined,
      onSlowConfirm: undefined,
    };
  }

  /**
   * An outcome's event the broker did not store: its callback was settled all the same (settle/settle.ts),
   * and this line, with the event's facts, is what remains of it (docs/events-and-history.md).
   */
  function onEventLost(report: AttemptReport, error: Error, final: boolean): void {
    const outcome = 'decision' in report ? report.decision.kind : report.kind;
    const facts = { id: report.id, report: report.kind, outcome, attempt: 'attempt' in report ? report.attempt : undefined, code: (error as { code?: string }).code, err: error.message };
    if (final) logger.error(facts, 'an outcome event was not stored; the callback was settled without it');
    else logger.warn(facts, 'a retry-scheduled event was not stored; the retry itself was');
  }

  function onFallback({ id, kind, cause, error }: SettleFallback): void {
    if (kind === 'hold') return void logger.warn({ id, cause, err: error.message }, 'could not hold a paused target\'s callback: it goes back to its queue (a bounded number of times, then P.dead as unsettled)');
    logger.error({ id, kind, cause, err: error.message }, 'could not store a copy: the message was rejected, for the broker to dead-letter to P.dead');
    observer.settleFallback(kind, cause);
  }

  /** Logs a health transition (one line each) and defers what an opened circuit took out of the queue. */
  function apply(effects: Effects<Job>): void {
    const { transition, backoff } = effects;
    for (const job of effects.circuitOpen) void circuitOpen(job);
    if (backoff) context.control?.broadcastBackoff?.(backoff);
    if (transition) {
      if (!transition.shared) context.control?.broadcastHealth?.(transition.target, transition.to);
      logger.warn({ ...transition }, transition.to === 'degraded' ? 'target degraded: circuit open, attempts deferred but for probes' : 'target recovered: circuit closed');
      observer.transition(transition);
      // An opened circuit kept its oldest waiting callback as its first probe: start it now.
      if (transition.to === 'degraded') pump();
    }
  }

  /** The channel closed: drop its waiting jobs (the broker has requeued them); running ones finish. */
  function channelClosed(channel: ConfirmChannel): void {
    closed.add(channel);
    for (const job of scheduler.drop((waiting) => waiting.channel === channel)) job.finish();
  }

  /** Another worker's circuit transition for `target`, read from P.control: taken as this worker's own. */
  function shareHealth(target: string, state: HealthState): void {
    if (scheduler.shareHealth) apply(scheduler.shareHealth(target, state, clock()));
  }

  /**
   * The worker stops, before it cancels its consumers: no attempt starts any more, no sweep moves
   * anything, and a message held for a wait before it goes back to its queue (settle/send-back.ts) goes back
   * now. What runs (attempts, settles, moves, holds, deferrals) finishes; what waits for a slot stays
   * waiting until `giveBackWaiting`.
   */
  function stop(): void {
    clearInterval(sweeper);
    clearTimeout(wake?.timer);
    stopping.abort();
  }

  /**
   * The consumers are cancelled (nothing more arrives): every job still waiting for a slot goes back to
   * its queue unattempted, and so does any that would wait from now on (a move that could not be
   * stored). Returns how many went back.
   */
  function giveBackWaiting(): number {
    givenBack = true;
    const waiting = scheduler.drop(() => true);
    for (const job of waiting) giveBack(job);
    return waiting.length;
  }

  /**
   * A job the stopping worker will not attempt: nacked with requeue, at once, so another worker takes
   * it now, not after DRAIN_TIMEOUT. This is the one requeue the worker makes, once per message per
   * stop and only after its consumers are cancelled, so the broker never hands it back to this worker.
   * It needs no count of ours (return-bound.ts): the message was decoded and never attempted, so it
   * cannot be what stops a worker, and a worker that dies holding it is counted by the broker on every
   * version (docs/operations.md#graceful-shutdown).
   */
  function giveBack(job: Job): void {
    try {
      if (!closed.has(job.channel)) job.channel.nack(job.message, false, true);
    } catch {
      // The channel closed meanwhile: the broker has requeued the message.
    }
    job.finish();
  }

  return { handle, channelClosed, shareHealth, stop, giveBackWaiting, limitsChanged: pump };
}
