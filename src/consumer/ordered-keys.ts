import { randomUUID } from 'node:crypto';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import type { Logger } from '../logger.js';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import { HEADER } from '../message/headers.js';
import { callbackHeaders, recordHeaders } from '../ordering/log-records.js';
import type { LogEntry } from '../ordering/log-entry.js';
import type { LogRecord } from '../policy/key-log.js';
import { KeyOrder, type Step } from '../policy/key-order.js';
import type { Lane } from '../reports.js';
import type { SettledAs } from '../settle/settle.js';
import type { Job } from './admit.js';
import { renewLog } from './log-renewal.js';
import { takeOver, type Shard } from './shard-takeover.js';

/**
 * Ordered delivery per key (docs/ordering.md), the consumer's side: each ordered shard is a quorum
 * queue with a single active consumer, so one worker at a time owns it. The owner keeps its keys'
 * order (policy/key-order.ts decides) and carries the decisions out: a follower of a held key goes to
 * the shard's log (a stream) before its message is acked; a log record is appended once what it
 * announces is stored and before the ack it concerns; the log's oldest follower of a key whose head
 * settled is put back in the shard, stamped.
 *
 * Taking a shard over (on the first message of a new shard channel) is shard-takeover.ts. A shard
 * whose channel closes is forgotten at once: the broker gives its unacked messages to the next owner,
 * who rebuilds the rest from the log.
 */

/** After how long a follower that could not be put back in its shard is tried again. */
const RESUME_RETRY_MS = 5_000;

/** How often the callbacks waiting behind running heads are looked at (sweep): a walk over every key, so not at every tick. */
const SPILL_EVERY_MS = 5_000;

export interface OrderedKeysDeps {
  /** Lane → its shard's log stream (the lanes of ordered shards only). */
  logs: ReadonlyMap<Lane, string>;
  /** Where a follower taken from the log goes back into its shard: exchange and routing key of its key. */
  resumeRoute: (key: string) => { exchange: string; routingKey: string };
  /** A route into shard `shard`, for its wake. */
  wakeRoute: (shard: number) => { exchange: string; routingKey: string };
  /** The lane of the shard `key` belongs to: its copies and put-backs go there, whatever shard it came in. */
  homeLane: (key: string) => Lane;
  connection: () => ChannelModel | undefined;
  /** A job may be attempted: it enters the pipeline's admission. */
  run: (job: Job) => void;
  logger: Logger;
  clock: () => number;
  /** PUBLISH_TIMEOUT: how long putting a follower back waits for its confirm. */
  publishTimeoutMs: number;
  /** ORDERED_ON_DEAD=stop: a parked head stops its key until a replay or a release. */
  stopOnDead: boolean;
  /** Callbacks of one key that may wait in the worker behind its running head (KeyOrder's `maxWaiting`). */
  maxWaiting?: number;
  /** Log records older than this are written again (log-renewal.ts): well within the logs' retention. */
  renewAfterMs: number;
}

/** The ordered shards this worker owns now, by the lane their channel consumes. */
export class OrderedKeys {
  private readonly shards = new Map<Lane, Shard>();
  /** Each settling job's step, between its hook (before the ack) and `after`. */
  private readonly steps = new WeakMap<Job, Step<Job>>();
  private lastSpill = 0;
  /** The worker stops (`takeWaiting`). */
  private stopping = false;

  constructor(private readonly deps: OrderedKeysDeps) {}

  isOrdered(lane: Lane): boolean {
    return this.deps.logs.has(lane);
  }

  /**
   * The shard a callback of `key` that came in `lane` belongs to, if another (its producer's routing key
   * named a wrong bucket): taken here, its retries would go there, to a shard that knows nothing of it.
   */
  misrouted(lane: Lane, key: string): Lane | undefined {
    const home = this.deps.homeLane(key);
    return home === lane ? undefined : home;
  }

  /** An operator's release of a stopped key (`callback-relay ordered release`), arrived in its shard. */
  async released(lane: Lane, channel: ConfirmChannel, key: string, ack: () => void): Promise<void> {
    const shard = this.shardOf(lane, channel);
    if (!(await shard.ready) || shard.closed) return;
    const step = shard.order.release(key);
    // Released here but not in the log: the shard is handed on, and its next owner gets the release again.
    if (!(await this.record(shard, key, step.records, 'an ordered key release'))) return;
    this.deps.logger.info({ key, released: step.records.length > 0 }, 'ordered key release');
    ack();
    if (step.read) await this.resume(shard, step.read.key, step.read.offset);
  }

  /** A shard's wake: its active consumer takes it over if it has not yet (a log with keys to resume and nothing else arriving). */
  async woken(lane: Lane, channel: ConfirmChannel, ack: () => void): Promise<void> {
    await this.shardOf(lane, channel).ready;
    ack();
  }

  /**
   * Knocks on every shard (WAKE_EVERY_MS and at each start): a worker that took a shard over from one
   * that died learns so from a delivery, and a shard whose keys wait only in its log gets none otherwise.
   */
  async wakeAll(channel: ConfirmChannel): Promise<void> {
    for (let shard = 0; shard < this.deps.logs.size; shard += 1) {
      const { exchange, routingKey } = this.deps.wakeRoute(shard);
      await publishConfirmed(
        channel,
        { exchange, routingKey },
        Buffer.alloc(0),
        { headers: { [HEADER.orderWake]: 1 } },
        this.deps.publishTimeoutMs,
      );
    }
  }

  /** A decoded callback with an orderKey from a shard: attempt it, let it wait, log it, or drop a duplicate. */
  async arrive(job: Job, key: string): Promise<void> {
    const shard = this.shardOf(job.lane, job.channel);
    // After the stop's `takeWaiting`, nothing more waits here: it stays unacked until the shard closes.
    if (!(await shard.ready) || shard.closed || this.stopping) return job.finish();
    const { delivery } = job;
    const admission = shard.order.arrive({ key, id: delivery.id, stamp: delivery.orderStamp, item: job, at: this.deps.clock() });
    switch (admission.kind) {
      case 'attempt':
        return this.deps.run(job);
      case 'wait':
        return;
      case 'log':
        return this.toLog(shard, key, [job], admission.behind);
      case 'spill':
        return this.toLog(shard, key, admission.items, admission.behind);
      case 'drop':
        admission.item.channel.ack(admission.item.message);
        return admission.item.finish();
    }
  }

  /**
   * The hook settle runs for an ordered job once its outcome is stored, before its ack (settle.ts
   * `beforeAck`): `held`, its copy waits in the delay path and its key with it; else it is settled for
   * good. The key's log records are appended there; what follows runs after the ack (`after`). A record
   * that cannot be stored leaves the message unacked and hands the shard on.
   */
  beforeAck(job: Job): (outcome: SettledAs) => Promise<void> {
    return async (outcome) => {
      const key = job.orderKey;
      const shard = this.shards.get(job.lane);
      if (key === undefined || !shard || shard.channel !== job.channel || shard.closed) return;
      const { id } = job.delivery;
      const step =
        outcome === 'held' ? shard.order.held(key, id) : shard.order.settled(key, id, outcome === 'parked' && this.deps.stopOnDead);
      this.steps.set(job, step);
      // Appended in the order decided (the log keeps call order): the records, then the key's waiting
      // callbacks, before anything of the key decided later. Only the records hold the head's ack.
      const recorded = Promise.all(step.records.map((record) => this.append(shard, recordHeaders(record))));
      if (step.toLog.length > 0) void this.toLog(shard, key, step.toLog, step.behind);
      try {
        await recorded;
      } catch (error) {
        void shard.channel.close().catch(() => {});
        throw error;
      }
    };
  }

  /** After an ordered job's ack: its key's next runs. */
  async after(job: Job): Promise<void> {
    const step = this.steps.get(job);
    this.steps.delete(job);
    const shard = this.shards.get(job.lane);
    const key = job.orderKey;
    if (!step || key === undefined || !shard || shard.channel !== job.channel || shard.closed) {
      // Its shard is gone: the broker has the jobs this step held back; they end here unattempted.
      step?.drop?.finish();
      step?.next?.finish();
      return;
    }
    if (step.drop) {
      step.drop.channel.ack(step.drop.message);
      step.drop.finish();
    }
    if (step.next) this.deps.run(step.next);
    if (step.read) await this.resume(shard, step.read.key, step.read.offset);
  }

  /**
   * Callbacks that waited too long behind a running head go to the log (KeyOrder.spill), and each log
   * gets what it must keep past its retention written again (log-renewal.ts).
   */
  async sweep(maxWaitMs: number): Promise<void> {
    const now = this.deps.clock();
    if (now - this.lastSpill < SPILL_EVERY_MS) return;
    this.lastSpill = now;
    const before = now - maxWaitMs;
    for (const shard of this.shards.values()) {
      if (shard.closed) continue;
      for (const { key, items, behind } of shard.order.spill(before)) void this.toLog(shard, key, items, behind);
      shard.renewing ??= this.renew(shard, now).finally(() => delete shard.renewing);
    }
  }

  /** The channel closed: its shard is forgotten, and its waiting jobs end (the broker has them back). */
  channelClosed(channel: ConfirmChannel): void {
    for (const [lane, shard] of this.shards) {
      if (shard.channel !== channel) continue;
      this.shards.delete(lane);
      this.forget(shard);
    }
  }

  /** The worker stops: every job waiting behind a head, to give back unattempted. */
  takeWaiting(): Job[] {
    this.stopping = true;
    return [...this.shards.values()].flatMap((shard) => shard.order.takeWaiting());
  }

  async close(): Promise<void> {
    for (const shard of this.shards.values()) this.forget(shard);
    this.shards.clear();
  }

  /** Shards owned here now (metrics). */
  owned(): number {
    return [...this.shards.values()].filter((shard) => !shard.closed).length;
  }

  /** Keys held in the shards owned here (metrics). */
  held(): number {
    let held = 0;
    for (const shard of this.shards.values()) held += shard.order.heldKeys().length;
    return held;
  }

  /** Held keys of the shards owned here, for metrics and operators. */
  heldKeys(): Array<{ key: string; head: string; logged: number }> {
    return [...this.shards.values()].flatMap((shard) => shard.order.heldKeys());
  }

  private forget(shard: Shard): void {
    shard.closed = true;
    for (const job of shard.order.takeWaiting()) job.finish();
    void shard.stop?.().catch(() => {});
    void shard.log?.close().catch(() => {});
  }

  private shardOf(lane: Lane, channel: ConfirmChannel): Shard {
    const existing = this.shards.get(lane);
    if (existing && existing.channel === channel) return existing;
    if (existing) this.forget(existing);
    const owner = randomUUID();
    const shard: Shard = {
      channel,
      owner,
      order: new KeyOrder<Job>(owner, this.deps.maxWaiting, this.deps.clock),
      ready: Promise.resolve(false),
      closed: false,
      claimedAt: this.deps.clock(),
    };
    shard.ready = takeOver(shard, this.deps.logs.get(lane) as string, {
      connection: this.deps.connection,
      logger: this.deps.logger,
      clock: this.deps.clock,
      resume: (key, offset) => void this.resume(shard, key, offset),
    }).catch((error: unknown) => {
      this.deps.logger.error({ lane, err: (error as Error).message }, 'an ordered shard could not be taken over; its channel closes');
      this.forget(shard);
      // Closing the channel hands the shard to another worker (or to this one, reopened).
      void shard.channel.close().catch(() => {});
      return false;
    });
    this.shards.set(lane, shard);
    return shard;
  }

  /**
   * Callbacks of `key` go to the log behind `behind`, in order: every append is made now, in the order
   * decided (the log keeps call order, so nothing of the key decided later comes before them), and each
   * message is acked once its record is stored. One not stored leaves its message unacked and hands the
   * shard on.
   */
  private async toLog(shard: Shard, key: string, jobs: Job[], behind?: string): Promise<void> {
    const stored = jobs.map((job) => {
      const { message } = job;
      const at = this.deps.clock();
      const record = recordHeaders({ kind: 'follower', owner: shard.owner, key, id: job.delivery.id, at, ...(behind ? { behind } : {}) });
      // A producer's own x-order- headers are dropped: only the relay writes records.
      const headers = { ...callbackHeaders(message.properties.headers ?? {}), ...record };
      return this.append(shard, headers, message.content, message.properties).then(
        () => undefined,
        (error: unknown) => error,
      );
    });
    for (const [i, job] of jobs.entries()) {
      const error = await stored[i];
      if (error !== undefined) {
        this.deps.logger.error({ key, err: (error as Error).message }, 'an ordered callback could not be logged; its shard is handed on');
        void shard.channel.close().catch(() => {});
        return;
      }
      job.channel.ack(job.message);
      job.finish();
    }
  }

  /**
   * The log's follower at `offset` goes back into its shard, stamped with the offset (and where it was
   * first logged), to run as its key's head.
   */
  private async resume(shard: Shard, key: string, offset: number): Promise<void> {
    try {
      if (!shard.log) throw new Error('the shard has no log');
      const entry = await shard.log.read(offset);
      if (entry === undefined) return await this.gone(shard, key, offset);
      const { exchange, routingKey } = this.deps.resumeRoute(key);
      const seq = shard.order.putBackSeq(key, offset);
      const headers = {
        ...callbackHeaders(entry.headers),
        [HEADER.orderFrom]: offset,
        ...(seq !== undefined && { [HEADER.orderSeq]: seq }),
      };
      const options = { ...entry.properties, headers, persistent: true, mandatory: true };
      await publishConfirmed(shard.channel, { exchange, routingKey }, entry.body, options, this.deps.publishTimeoutMs);
    } catch (error) {
      if (shard.closed) return;
      if (!shard.order.readFailed(key, offset)) return;
      this.deps.logger.error(
        { key, offset, err: (error as Error).message },
        'an ordered follower could not be put back in its shard; tried again soon',
      );
      this.retryLater(shard, key);
    }
  }

  /** The key's next head, still to be put back, is read again after a while. */
  private retryLater(shard: Shard, key: string): void {
    setTimeout(() => {
      const step = shard.closed ? undefined : shard.order.retryRead(key);
      if (step?.read) void this.resume(shard, step.read.key, step.read.offset);
    }, RESUME_RETRY_MS).unref();
  }

  /**
   * The follower at `offset` is no longer in the log (retention dropped it, which renewal exists to
   * prevent: its shard went unowned for weeks). Its `done` is written and its key moves on.
   */
  private async gone(shard: Shard, key: string, offset: number): Promise<void> {
    const step = shard.order.gone(key, offset);
    if (step.records.length > 0)
      this.deps.logger.error(
        { key, offset },
        "an ordered follower is gone from its shard's log (past its retention); its key moves on without it",
      );
    if (!(await this.record(shard, key, step.records, 'an ordered record'))) return;
    if (step.next) this.deps.run(step.next);
    if (step.read) await this.resume(shard, step.read.key, step.read.offset);
    // Its renewal copy is still being written: read again once it is there.
    else if (step.records.length === 0 && !step.next && shard.order.puttingBack(key, offset)) this.retryLater(shard, key);
  }

  /** Renews the shard's log (log-renewal.ts); a failed append hands the shard on, like any other. */
  private async renew(shard: Shard, now: number): Promise<void> {
    try {
      const renewed = await renewLog(shard, now, this.deps.renewAfterMs, this.deps.logger);
      if (renewed > 0) this.deps.logger.info({ keys: shard.order.size, renewed }, "ordered keys renewed in their shard's log");
    } catch (error) {
      if (shard.closed) return;
      this.deps.logger.error({ err: (error as Error).message }, "an ordered shard's log could not be renewed; the shard is handed on");
      void shard.channel.close().catch(() => {});
    }
  }

  /** Appends `records` in order; one not stored hands the shard on (its channel closes): false. */
  private async record(shard: Shard, key: string, records: readonly LogRecord[], what: string): Promise<boolean> {
    try {
      for (const record of records) await this.append(shard, recordHeaders(record));
      return true;
    } catch (error) {
      this.deps.logger.error({ key, err: (error as Error).message }, `${what} could not be logged; its shard is handed on`);
      void shard.channel.close().catch(() => {});
      return false;
    }
  }

  private async append(shard: Shard, headers: Record<string, unknown>, body?: Buffer, properties?: LogEntry['properties']): Promise<void> {
    if (!shard.log) throw new Error('the shard has no log');
    await shard.log.append(headers, body, properties);
  }
}
