import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { DEFERRAL_HEADERS, HEADER, carriedHeaders } from '../message/headers.js';
import { policyHeaders } from '../config/policy-headers.js';
import type { AttemptRecord } from '../policy/verdict.js';
import type { Decision } from '../policy/decide.js';
import type { DelayMode } from '../topology/delay-levels.js';
import { deliveryRoute, orderedRoute, type Route, type TopologyNames } from '../topology/topology-names.js';
import { isClosed } from '../amqp/publish-confirmed.js';
import { RelayError } from '../errors.js';
import { publishCopy, type Copy, type CopyFailure, type CopyResult } from './publish-copy.js';
import { sendBack, type ReturnRoute } from './send-back.js';

export type { AttemptRecord };

/**
 * Hold a paused target's callback: move it, unattempted, to `queue` (P.paused; from P.paused.check,
 * back there or to its lane), its headers as they are, attempt count included. `returnTo` is where it
 * goes when the hold cannot be stored: its own queue, a bounded number of times (send-back.ts).
 */
export interface Hold {
  kind: 'hold';
  queue: string;
  returnTo: ReturnRoute;
}

/**
 * Move a callback unattempted, its attempt count unchanged: deferred through the delay path back to
 * its lane while its target's circuit is open (with the deferral's headers), or to the overflow queue
 * (P.slow) while its target is busy. A move that cannot be stored leaves the message unsettled and
 * resolves `false`: the caller still holds it and decides (attempt it, or spend the attempt).
 */
export type Move = { kind: 'move'; delayMs: number; headers: Record<string, unknown> } | { kind: 'move'; queue: string };

/** What settle carries out: the retry policy's decision, a hold, or a move. */
export type Settlement = Decision | Hold | Move;

export type CopyKind = 'retry' | 'dead';

/**
 * A copy that could not be stored: a retry's or dead letter's original was rejected to P.dead
 * instead, a held callback's went back to its own queue.
 */
export interface SettleFallback {
  id: string;
  kind: CopyKind | 'hold';
  cause: CopyFailure;
  error: Error;
}

/** How long a copy waits for its confirm when the context does not say (the PUBLISH_TIMEOUT default). */
const DEFAULT_CONFIRM_TIMEOUT_MS = 10_000;

/** Failures a second publish can cure once the topology is declared again (a deleted queue or binding). */
const RETRIED: ReadonlySet<CopyFailure> = new Set(['returned', 'nacked']);

export interface SettleContext {
  /** Told how long each confirm took. */
  onConfirm?: (kind: CopyKind, seconds: number) => void;
  /** Told when no copy could be stored and the original was rejected to P.dead by the broker instead. */
  onFallback?: (fallback: SettleFallback) => void;
  channel: ConfirmChannel;
  message: ConsumeMessage;
  names: TopologyNames;
  mode: DelayMode;
  /** The message's lane bucket: a retry goes back to its own lane. */
  bucket: number;
  /** An ordered callback's bucket: its copies go back to its shard instead, stamped as a held head's copy. */
  orderBucket?: number | undefined;
  /**
   * Runs once the outcome is stored and before the original is acked or rejected: `held`, its copy waits
   * in the delay path; `parked`, it is in P.dead (not cancelled); `settled`, delivered or cancelled. An
   * ordered callback's key records go here (consumer/ordered-keys.ts): after the copy they announce,
   * before the ack that would leave only them. Throwing leaves the original unsettled.
   */
  beforeAck?: ((outcome: SettledAs) => Promise<void>) | undefined;
  /**
   * PUBLISH_TIMEOUT: how long an event may wait for its confirm, and after how long a copy's late
   * confirm is reported (onSlowConfirm). A copy waits for a definite outcome: see settle.
   */
  confirmTimeoutMs?: number;
  /** Told when a copy's confirm is later than confirmTimeoutMs (a blocked connection): settle goes on waiting. */
  onSlowConfirm?: (kind: CopyKind | 'hold' | 'move', error: Error) => void;
  /** The worker is stopping: a hold's send-back goes back without its wait (send-back.ts). */
  stopping?: AbortSignal;
  /** Declares the whole topology again; asked for when a copy came back unroutable or nacked. */
  redeclare?: () => Promise<void>;
  /** EVENTS=durable: stores the outcome's event (see storeEventFirst and storeEventAfter). */
  storeEvent?: StoreEvent;
  /**
   * Told when an outcome's event could not be stored; its callback is settled all the same (`final`:
   * a delivered, dead, canceled or paused event; else retry-scheduled).
   */
  onEventLost?: (error: Error, final: boolean) => void;
}

/** What became of a callback, for `beforeAck`. */
export type SettledAs = 'held' | 'parked' | 'settled';

/** A dead letter's outcome: a cancelled callback is settled as its operator asked, any other parked. */
const deadAs = (settlement: { reason: string }): SettledAs => (settlement.reason === 'canceled' ? 'settled' : 'parked');

/** What a hold needs of the context: no route (it goes to a named queue), no attempt record. */
export type HoldContext = Pick<
  SettleContext,
  | 'channel'
  | 'message'
  | 'confirmTimeoutMs'
  | 'redeclare'
  | 'storeEvent'
  | 'onConfirm'
  | 'onFallback'
  | 'onEventLost'
  | 'onSlowConfirm'
  | 'stopping'
>;

/** Publishes an outcome's event and waits for its confirm; `rejected` when no copy was stored and the original goes to P.dead. */
export type StoreEvent = (rejected: boolean) => Promise<CopyResult>;

/**
 * Step 5: carry out a decision. A retry or dead-letter copy is published and confirmed by the
 * broker (and not returned as unroutable) before the original is acked, so a crash in between
 * duplicates a callback but never loses one.
 *
 * A copy waits for a definite outcome: a confirm that is late (a connection blocked by a memory or
 * disk alarm) is reported (onSlowConfirm) and waited for, never taken as "not stored": the copy may
 * be stored, and rejecting the original too would leave the callback both retried and parked. The
 * channel closing is a definite answer (the broker requeues the original).
 *
 * When the copy cannot be stored on a live channel (returned, nacked, headers too large), the
 * topology is declared again and a returned or nacked copy published once more; if that fails too,
 * the original is rejected without requeue and the broker dead-letters it to P.dead (both consumed
 * queues name P.dead as their dead-letter target). Resolves `true` when the decision was carried out,
 * `false` when the original was rejected (or, for a hold, sent back) instead. Throws if the channel
 * is gone: the broker then redelivers the original.
 *
 * A hold is settled the same way, with one difference: a copy it cannot store sends the original
 * back to its own queue (send-back.ts: after a wait, with a count of ours; past the bound, parked in
 * P.dead as `unsettled`). A hold spends no attempt and decides nothing about the callback, so a
 * failed hold is first met (and held) again; only a hold that keeps failing parks it, and a parked
 * callback can be replayed (`dlq replay --reason unsettled`).
 *
 * EVENTS=durable: a final outcome's event (`delivered`, `dead`, `canceled`) and a hold's `paused`
 * event are stored before anything else, so a crash in between repeats the event, never loses it. An
 * event that cannot be stored (refused, unroutable, no confirm in time) never holds its callback back:
 * the callback is settled as decided and the lost event reported (onEventLost). Sending the callback
 * back instead would deliver it again only for its event, without end on RabbitMQ 4.3. A retry's event
 * (`retry-scheduled`, not final) follows its copy, on the same terms.
 */
export function settle(settlement: Hold, record: Pick<AttemptRecord, 'id'>, context: HoldContext): Promise<boolean>;
export function settle(settlement: Move, record: Pick<AttemptRecord, 'id'>, context: SettleContext): Promise<boolean>;
export function settle(settlement: Settlement, record: AttemptRecord, context: SettleContext): Promise<boolean>;
export async function settle(settlement: Settlement, record: Pick<AttemptRecord, 'id'>, context: HoldContext): Promise<boolean> {
  const { channel, message } = context;
  if (settlement.kind === 'move') return move(settlement, record, context as SettleContext);
  if (settlement.kind !== 'retry') await storeEvent(context, false, true);
  if (settlement.kind === 'ack') {
    await (context as SettleContext).beforeAck?.('settled');
    channel.ack(message);
    return true;
  }
  const copy = copyOf(settlement, record, context);
  const started = performance.now();
  const timeoutMs = context.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS;
  const wait = { slowAfterMs: timeoutMs, onSlow: (error: Error) => context.onSlowConfirm?.(settlement.kind, error) };
  const result = await publishOnceMore(context, () => publishCopy(channel, copy, message, record.id, wait));
  if (result.stored) {
    if (settlement.kind !== 'hold') context.onConfirm?.(settlement.kind, (performance.now() - started) / 1000);
    if (settlement.kind === 'retry') await storeEvent(context, false, false);
    if (settlement.kind !== 'hold') await (context as SettleContext).beforeAck?.(settlement.kind === 'retry' ? 'held' : deadAs(settlement));
    channel.ack(message);
    return true;
  }
  const fallback: SettleFallback = { id: record.id, kind: settlement.kind, cause: result.cause, error: result.error };
  if (settlement.kind === 'hold') {
    context.onFallback?.(fallback);
    // Throws on a channel that closed meanwhile: the broker has requeued the original already.
    await sendBack(channel, message, settlement.returnTo, result.error.message, wait, record.id, context.stopping);
    return false;
  }
  // No copy: the original goes to P.dead by rejection. Its final event says so (a dead copy's is stored already).
  if (settlement.kind === 'retry') await storeEvent(context, true, true);
  await (context as SettleContext).beforeAck?.(settlement.kind === 'retry' ? 'parked' : deadAs(settlement));
  // Throws on a channel that closed meanwhile: the broker redelivers the original instead.
  channel.nack(message, false, false);
  context.onFallback?.(fallback);
  return false;
}

/**
 * A move has no event and no fallback of its own: stored → acked; not stored → the caller decides. A
 * late confirm is waited for like any copy's: taking it as "not stored" could leave two copies.
 */
async function move(settlement: Move, record: Pick<AttemptRecord, 'id'>, context: SettleContext): Promise<boolean> {
  const { channel, message } = context;
  const headers = carriedHeaders(message.properties.headers);
  let copy: Copy;
  if ('queue' in settlement) copy = toQueue(settlement.queue, headers);
  else {
    const route = routeOf(context, settlement.delayMs);
    copy = viaRoute(route, { ...headers, ...settlement.headers, ...route.headers }, context);
  }
  const wait = {
    slowAfterMs: context.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS,
    onSlow: (error: Error) => context.onSlowConfirm?.('move', error),
  };
  const result = await publishOnceMore(context, () => publishCopy(channel, copy, message, record.id, wait));
  if (!result.stored) return false;
  await context.beforeAck?.('delayMs' in settlement ? 'held' : 'settled');
  channel.ack(message);
  return true;
}

/**
 * Publishes; when the broker returned or nacked the publish on a live channel, declares the topology
 * again and publishes once more. Throws if the channel is gone.
 */
async function publishOnceMore(context: HoldContext, publish: () => Promise<CopyResult>): Promise<CopyResult> {
  const { channel } = context;
  for (let round = 1; ; round += 1) {
    const result = await publish();
    if (result.stored) return result;
    if (result.cause === 'closed' || isClosed(channel)) throw result.error;
    if (round === 1 && RETRIED.has(result.cause)) {
      // A redeclare that fails (a conflicting queue an operator made) leaves the retry to fail too.
      await context.redeclare?.().catch(() => {});
      if (!isClosed(channel)) continue;
    }
    return result;
  }
}

/**
 * EVENTS=durable: stores the outcome's event and waits for its confirm (PUBLISH_TIMEOUT); a returned
 * or nacked event is published once more after a redeclare. One that still is not stored is
 * reported to the context and its callback settled all the same (see settle). Throws only when the
 * channel is gone: the broker redelivers the callback, and its event is published again.
 */
async function storeEvent(context: HoldContext, rejected: boolean, final: boolean): Promise<void> {
  const { storeEvent: store } = context;
  if (!store) return;
  const result = await publishOnceMore(context, () => store(rejected));
  if (!result.stored) {
    const lost = new RelayError(
      'CR_ERR_EVENT_NOT_STORED',
      `the outcome event was not stored (${result.cause}: ${result.error.message}); the callback is settled without it`,
      { cause: result.error },
    );
    context.onEventLost?.(lost, final);
  }
}

/** The copy a settlement publishes: its route, and the headers that carry the retry state. */
function copyOf(settlement: Exclude<Settlement, { kind: 'ack' } | Move>, record: Pick<AttemptRecord, 'id'>, context: HoldContext): Copy {
  // Unchanged but for what dead-lettering added (P.paused → P.paused.check): holding spends no attempt.
  if (settlement.kind === 'hold') return toQueue(settlement.queue, carriedHeaders(context.message.properties.headers));
  // Only a hold is settled without a route and a record (settle's overloads).
  return decisionCopy(settlement, record as AttemptRecord, context as SettleContext);
}

function decisionCopy(settlement: Exclude<Decision, { kind: 'ack' }>, record: AttemptRecord, context: SettleContext): Copy {
  const { message, names, mode } = context;
  switch (settlement.kind) {
    case 'retry': {
      const route = routeOf(context, settlement.delayMs);
      return viaRoute(route, { ...recordHeaders(message, record), ...route.headers, [HEADER.attempt]: settlement.attempt }, context);
    }
    case 'dead':
      return toQueue(names.deadQueue, {
        ...recordHeaders(message, record),
        [HEADER.reason]: settlement.reason,
        [HEADER.attempts]: record.attempts,
      });
  }
}

/** Where a delayed copy goes: its lane, or an ordered callback's shard (with the stamp its shard's owner knows it by). */
function routeOf(context: SettleContext, delayMs: number): Route {
  const { names, mode, orderBucket } = context;
  if (orderBucket === undefined) return deliveryRoute(names, mode, delayMs, context.bucket, Date.now());
  const route = orderedRoute(names, mode, delayMs, orderBucket, Date.now());
  return { ...route, headers: { ...route.headers, [HEADER.orderCopy]: 1 } };
}

/** Through the default exchange, which returns a mandatory message when the queue does not exist. */
const toQueue = (queue: string, headers: Record<string, unknown>): Copy => ({ exchange: '', routingKey: queue, headers, mandatory: true });

/**
 * The x-delayed-message exchange routes a delayed message to no queue when it is published (only when
 * its delay elapses), so the broker would return every one marked mandatory; the plugin does not
 * support the flag: https://github.com/rabbitmq/rabbitmq-delayed-message-exchange#limitations
 */
function viaRoute(route: Route, headers: Record<string, unknown>, { names, mode }: SettleContext): Copy {
  const pluginExchange = mode === 'plugin' && route.exchange === names.exchange;
  return { exchange: route.exchange, routingKey: route.routingKey, headers, mandatory: !pluginExchange };
}

function recordHeaders(message: ConsumeMessage, record: AttemptRecord): Record<string, unknown> {
  const headers: Record<string, unknown> = carriedHeaders(message.properties.headers);
  for (const name of DEFERRAL_HEADERS) delete headers[name];
  const put = (name: string, value: unknown): void => {
    if (value !== undefined) headers[name] = value;
  };
  put(HEADER.firstAttemptAt, record.firstAttemptAt);
  put(HEADER.lastAttemptAt, record.lastAttemptAt);
  put(HEADER.lastStatus, record.lastStatus);
  put(HEADER.lastError, record.lastError);
  if (record.heldMs) headers[HEADER.heldMs] = record.heldMs;
  if (record.policy) Object.assign(headers, policyHeaders(record.policy));
  return headers;
}
