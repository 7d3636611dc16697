import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { HealthState } from '../isolation/health.js';
import type { AttemptKind, Effects, Scheduler, Source } from '../isolation/scheduler.js';
import type { Lane } from '../reports.js';
import { admit, jobOf, sourceOf, type Job } from './admit.js';
import { attempt, type Attempted } from './attempt.js';
import { concludeAttempt, concludeInvalid, concludeUnattempted, settleConcluded, type Concluded } from './conclude.js';
import { decode, isOrderWake, orderReleaseOf } from './decode.js';
import { BrokerEffects, type MessageEffects, type Place } from './effects.js';
import { HealthNews } from './health-news.js';
import { circuitStep, overflow } from './move-out.js';
import { effectsSettings, stageDeps, type PipelineContext, type StageDeps } from './pipeline-context.js';
import { LimitWake, Sweeper } from './pipeline-timers.js';
import { orderBucket } from '../topology/topology-names.js';
import type { Move } from '../settle/settle.js';

export type { Job, Lane, PipelineContext };

/**
 * A callback stored in the delay path for its limit (LIMIT_HOLD_MAX, `limitHoldMs`) comes back after this
 * many holds at most, and is looked at again: a limit cleared meanwhile reaches it that soon.
 */
const LIMIT_DEFER_HOLDS = 3;

/**
 * An ordered callback waits in the worker, unacked, behind its key's running head at most this long;
 * then it goes to its shard's log (ordered-keys.ts), far below RabbitMQ's consumer timeout (30 min).
 */
const ORDER_WAIT_MAX_MS = 60_000;

/**
 * Where a stage failed. Before a decision reached settle (`prepare`, `attempt`, `conclude`) the
 * message goes back to its own queue, a bounded number of times; a failed `settle` or `move` means
 * its channel is gone (the broker redelivers it) or it went back already.
 */
type Stage = 'prepare' | 'attempt' | 'conclude' | 'settle' | 'move';

/** A message on its way, as far as a failed stage knows it. */
type Handled = Omit<Place, 'bucket'> & Pick<Job, 'finish' | 'orderKey'> & { delivery?: Job['delivery'] };

/**
 * The per-message path, top to bottom: decode (1) → admit (2) → wait for a slot (the scheduler) →
 * attempt (3) → conclude (4) → settle (5); each step a function of its own (admit.ts, attempt.ts,
 * conclude.ts), the broker's part in effects.ts. A cancelled callback is parked, a paused target's
 * held and one whose schedule ran out while circuits held it parked as `exhausted`, all unattempted.
 * While it waits, a busy target's callback may move to the overflow queue (once), and one whose
 * target's circuit is open is deferred through the delay path (move-out.ts). The promise `handle`
 * returns settles once the message has been settled (or dropped because its channel closed); it
 * rejects only when settling failed, and the broker then redelivers the message.
 */
class Pipeline {
  /** Channels that closed: the broker has requeued their unacked messages, so their jobs must not run. */
  private readonly closed = new WeakSet<ConfirmChannel>();
  /** The worker is stopping: no attempt starts any more, and waits that hold a message are cut short. */
  private readonly stopping = new AbortController();
  /** The consumers are cancelled and what waited for a slot went back: a job that would wait now goes back at once. */
  private givenBack = false;
  private readonly scheduler: Scheduler<Job>;
  private readonly effects: MessageEffects;
  private readonly health: HealthNews;
  private readonly wake = new LimitWake(() => this.pump());
  private readonly sweeper: Sweeper;
  private readonly stages: StageDeps;

  constructor(private readonly context: PipelineContext) {
    const { scheduler, clock, logger, observer, control } = context;
    this.scheduler = scheduler;
    this.effects = new BrokerEffects({
      ...effectsSettings(context),
      stopping: this.stopping.signal,
      isClosed: (channel) => this.closed.has(channel),
    });
    this.health = new HealthNews(logger, observer, control);
    this.stages = stageDeps(context, this.effects, { apply: (effects) => this.apply(effects), freed: () => this.pump() });
    const { laneExcess } = context;
    const { underway } = this.stages.moving;
    if (laneExcess)
      scheduler.watchWindows?.({ of: (job) => job.lane, excess: (lane) => Math.max(0, laneExcess(lane) - underway.of(lane)) });
    // Busy targets' waiting callbacks leave their lanes for the overflow queue (target-isolation.ts).
    this.sweeper = new Sweeper((loopBusy) => {
      // A wait for a limit past LIMIT_HOLD_MAX would meet the broker's consumer timeout: such callbacks wait in the delay path instead.
      const { limitHoldMs } = context;
      for (const { item, delayMs } of scheduler.outwaiting?.(clock(), limitHoldMs, LIMIT_DEFER_HOLDS * limitHoldMs) ?? [])
        void this.deferForLimit(item, delayMs);
      for (const job of scheduler.sweep(clock(), loopBusy())) void this.overflow(job);
      void context.ordered?.sweep(ORDER_WAIT_MAX_MS).catch((error: unknown) => this.orderError(error));
    });
  }

  /** Step 1: message → job, or straight to P.dead (reason `invalid`) when it cannot be decoded. */
  handle(message: ConsumeMessage, channel: ConfirmChannel, lane: Lane): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const { observer } = this.context;
      observer.inFlight(1);
      let finished = false;
      const finish = (error?: unknown): void => {
        if (finished) return;
        finished = true;
        observer.inFlight(-1);
        if (error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error(String(error)));
      };
      const { ordered } = this.context;
      if (ordered?.isOrdered(lane)) {
        // The worker stops: the shard's channel closes once what runs has ended (`giveBack`).
        if (this.givenBack) return finish();
        const { headers } = message.properties;
        if (isOrderWake(headers)) return void ordered.woken(lane, channel, () => channel.ack(message)).then(() => finish(), finish);
        const released = orderReleaseOf(headers);
        if (released !== undefined)
          return void ordered.released(lane, channel, released, () => channel.ack(message)).then(() => finish(), finish);
      }
      let job: Job;
      try {
        const decoded = decode(message, this.context.maxPayloadBytes, this.context.policies);
        if (!decoded.ok) return void this.settle({ message, channel, lane, bucket: 0, finish }, concludeInvalid(decoded));
        job = jobOf(decoded.delivery, message, channel, lane, finish, this.stages.jobs);
      } catch (error) {
        return this.handleError({ message, channel, lane, finish }, 'prepare', error);
      }
      const key = job.delivery.callback.orderKey;
      // From an ordered shard: its key's order decides when it is attempted (ordered-keys.ts).
      if (key !== undefined && ordered?.isOrdered(lane)) {
        const home = ordered.misrouted(lane, key);
        if (home !== undefined) {
          const error = `orderKey ${JSON.stringify(key)} belongs to ordered shard ${home.slice(1)} (routing key ordered.${orderBucket(key)}); it came to shard ${lane.slice(1)}`;
          return void this.settle(job, concludeInvalid({ ok: false, id: job.delivery.id, attempt: job.delivery.attempt, error }));
        }
        job.orderKey = key;
        job.orderBucket = orderBucket(key);
        return void ordered.arrive(job, key).catch((error: unknown) => this.handleError(job, 'prepare', error));
      }
      this.admit(job);
    });
  }

  /** Step 2: a job waits for a slot, or is parked or held unattempted. */
  admit(job: Job): void {
    const admission = admit(job, this.stages.admission, this.context.clock());
    if (admission === 'waits') return this.offer(job, sourceOf(job));
    void this.settle(job, concludeUnattempted(job, admission, this.context.names));
  }

  private offer(job: Job, source: Source): void {
    if (this.givenBack) return this.giveBack(job);
    const offered = this.scheduler.offer(job.target, job, source, this.context.clock());
    if (offered === 'circuit-open') void this.deferForCircuit(job);
    else if (offered === 'overflow') void this.overflow(job);
    else this.pump();
  }

  /** Starts attempts while there are free slots and waiting jobs, until the worker stops. */
  private pump(): void {
    if (this.stopping.signal.aborted) return;
    const { scheduler } = this;
    const { clock } = this.context;
    for (let next = scheduler.next(clock()); next; next = scheduler.next(clock())) {
      if (this.closed.has(next.item.channel)) {
        scheduler.abandon(next.target, next.kind);
        next.item.finish();
      } else void this.run(next.item, next.kind);
    }
    // A target held back by its limit (docs/limits.md) is pumped again when its limit lets a request go.
    this.wake.after(scheduler.wakeInMs?.(clock()), clock());
  }

  /** Steps 3 → 4 → 5 for a job that got a slot. */
  private async run(job: Job, kind: AttemptKind): Promise<void> {
    let attempted: Attempted;
    try {
      attempted = await attempt(job, kind, this.stages.attempts);
    } catch (error) {
      return this.handleError(job, 'attempt', error);
    }
    let concluded: Concluded;
    try {
      concluded = this.conclude(attempted);
    } catch (error) {
      return this.handleError(job, 'conclude', error);
    }
    await this.settle(job, concluded);
  }

  /** Step 4: what the outcome means; the attempt's span ends with it. */
  private conclude(attempted: Attempted): Concluded {
    const { logger, clock } = this.context;
    const concluded = concludeAttempt(attempted, this.stages.conclusions, clock());
    const { report } = concluded;
    if (logger.isLevelEnabled('debug')) {
      const { outcome, decision } = report;
      logger.debug(
        {
          id: report.id,
          target: report.target,
          lane: report.lane,
          attempt: report.attempt,
          status: outcome.status,
          error: outcome.error,
          ms: outcome.durationMs,
          decision: decision.kind,
        },
        'attempt',
      );
    }
    attempted.span?.end(report);
    return concluded;
  }

  /** Step 5, the end of every path: what was concluded is carried out, and the message's promise settles. */
  private async settle(at: Place & Pick<Job, 'finish' | 'orderKey'>, concluded: Concluded): Promise<void> {
    const ordered = at.orderKey === undefined ? undefined : this.context.ordered;
    // An ordered callback's key records go after its outcome is stored and before its ack (settle.ts beforeAck).
    if (ordered) at.beforeAck = ordered.beforeAck(at as Job);
    try {
      await settleConcluded(at, concluded, this.stages.settling);
    } catch (error) {
      return this.handleError(at, 'settle', error);
    }
    at.finish();
    if (ordered) void ordered.after(at as Job).catch((error: unknown) => this.orderError(error));
  }

  /** A step of an ordered key that failed after its callback was settled: its shard is handed on if it cannot go on. */
  private orderError(error: unknown): void {
    this.context.logger.error({ err: error instanceof Error ? error.message : String(error) }, 'an ordered key could not move on');
  }

  /** Where a stage's failure decides what becomes of its message (see `Stage`). */
  private handleError(job: Handled, stage: Stage, error: unknown): void {
    const id = job.delivery?.id;
    const err = error instanceof Error ? error.message : String(error);
    if (job.orderKey !== undefined) {
      // Sent back, it would queue behind its key's later callbacks; left unacked, its key would wait for
      // it: its channel closes instead, and the broker hands the whole shard, this one first, to the next owner.
      this.context.logger.error({ err, id, stage }, 'an ordered callback failed before it was settled; its shard is handed on');
      void job.channel.close().catch(() => {});
      return job.finish(error);
    }
    if (stage === 'settle' || stage === 'move') return job.finish(error);
    this.context.logger.error({ err, id }, 'a message failed before it was settled; it goes back to its queue');
    void this.effects.sendBack(job, err, id).then(() => job.finish(error));
  }

  /** A busy target's callback leaves its lane for the overflow queue; one that cannot be moved waits here after all. */
  private async overflow(job: Job): Promise<void> {
    let moved: boolean;
    try {
      moved = await overflow(job, this.stages.moving);
    } catch (error) {
      return this.handleError(job, 'move', error);
    }
    if (moved) job.finish();
    else this.offer(job, 'overflow');
  }

  /**
   * A callback its target's limit holds back for longer than LIMIT_HOLD_MAX leaves the worker through the
   * delay path, its attempt unchanged, and comes back about when its turn would have come. One that
   * cannot be stored waits here after all.
   */
  private async deferForLimit(job: Job, delayMs: number): Promise<void> {
    if (this.givenBack) return this.giveBack(job);
    let moved: boolean;
    try {
      moved = await this.moveHolding(job, { kind: 'move', delayMs, headers: {} }, 'limited');
    } catch (error) {
      return this.handleError(job, 'move', error);
    }
    if (!moved) this.offer(job, sourceOf(job));
  }

  /** A callback whose target's circuit is open (move-out.ts `circuitStep`); one whose deferral cannot be stored is forced. */
  private async deferForCircuit(job: Job): Promise<void> {
    if (this.givenBack) return this.giveBack(job);
    const step = circuitStep(job, this.stages.moving);
    if (step.kind === 'expired') return this.settle(job, concludeUnattempted(job, 'expired', this.context.names));
    if (step.kind === 'queued') return this.pump();
    let moved: boolean;
    try {
      moved = await this.moveHolding(job, step.move, 'deferred');
    } catch (error) {
      return this.handleError(job, 'move', error);
    }
    if (moved) return;
    if (this.givenBack) return this.giveBack(job);
    this.scheduler.offerOwed(job.target, job, sourceOf(job), this.context.clock(), { owed: true, forced: true, mayBorrow: false });
    this.pump();
  }

  /** A deferral through the delay path; an ordered callback's key is held until it is back. Finishes the job when moved. */
  private async moveHolding(job: Job, move: Move, kind: 'limited' | 'deferred'): Promise<boolean> {
    const { ordered } = this.context;
    if (ordered && job.orderKey !== undefined) job.beforeAck = ordered.beforeAck(job);
    if (!(await this.effects.move(job, job.delivery.id, move, kind))) return false;
    job.finish();
    if (ordered && job.orderKey !== undefined) void ordered.after(job).catch((error: unknown) => this.orderError(error));
    return true;
  }

  /** What the scheduler's answer changed: jobs an opened circuit hands back are deferred, its health told. */
  private apply(effects: Effects<Job>): void {
    for (const job of effects.circuitOpen) void this.deferForCircuit(job);
    // An opened circuit kept its oldest waiting callback as its first probe: start it now.
    if (this.health.tell(effects)) this.pump();
  }

  /** The channel closed: drop its waiting jobs (the broker has requeued them); running ones finish. */
  channelClosed(channel: ConfirmChannel): void {
    this.closed.add(channel);
    this.context.ordered?.channelClosed(channel);
    for (const job of this.scheduler.drop((waiting) => waiting.channel === channel)) job.finish();
  }

  /** Another worker's circuit transition for `target`, read from P.control: taken as this worker's own. */
  shareHealth(target: string, state: HealthState): void {
    if (this.scheduler.shareHealth) this.apply(this.scheduler.shareHealth(target, state, this.context.clock()));
  }

  /**
   * The worker stops, before it cancels its consumers: no attempt starts any more, no sweep moves
   * anything, and a message held for a wait before it goes back to its queue (settle/send-back.ts) goes
   * back now. What runs (attempts, settles, moves, holds, deferrals) finishes; what waits for a slot
   * stays waiting until `giveBackWaiting`.
   */
  stop(): void {
    this.sweeper.stop();
    this.wake.stop();
    this.stopping.abort();
  }

  /**
   * The consumers are cancelled (nothing more arrives): every job still waiting for a slot goes back to
   * its queue unattempted, and so does any that would wait from now on (a move that could not be
   * stored). Returns how many went back (an ordered shard's stay until it closes: `giveBack`).
   */
  giveBackWaiting(): number {
    this.givenBack = true;
    const waiting = [...this.scheduler.drop(() => true), ...(this.context.ordered?.takeWaiting() ?? [])];
    for (const job of waiting) this.giveBack(job);
    return waiting.filter((job) => !this.context.ordered?.isOrdered(job.lane)).length;
  }

  /**
   * A job the stopping worker will not attempt goes back to its queue at once (effects.ts `giveBack`).
   * One of an ordered shard stays unacked: the shard's channel closes once what runs has ended, and the
   * broker returns its messages, in order, before the shard's next consumer gets any (lane-channels.ts
   * `closeOnStop`); given back one by one, they would reach that consumer while a head still runs here.
   */
  private giveBack(job: Job): void {
    if (!this.context.ordered?.isOrdered(job.lane)) this.effects.giveBack(job);
    job.finish();
  }

  limitsChanged(): void {
    this.pump();
  }
}

/** The per-message path of a worker (see Pipeline), its methods bound: the worker passes them on as callbacks. */
export function createPipeline(context: PipelineContext) {
  const pipeline = new Pipeline(context);
  return {
    handle: pipeline.handle.bind(pipeline),
    admit: pipeline.admit.bind(pipeline),
    channelClosed: pipeline.channelClosed.bind(pipeline),
    shareHealth: pipeline.shareHealth.bind(pipeline),
    stop: pipeline.stop.bind(pipeline),
    giveBackWaiting: pipeline.giveBackWaiting.bind(pipeline),
    limitsChanged: pipeline.limitsChanged.bind(pipeline),
  };
}
