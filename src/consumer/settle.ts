import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { HEADER, carriedHeaders } from '../message/headers.js';
import { policyHeaders } from '../message/policy-headers.js';
import type { MessagePolicy } from '../policy/message-policy.js';
import type { Decision } from '../policy/decide.js';
import type { DelayMode } from '../topology/delay-mode.js';
import { deliveryRoute, type Route } from '../topology/delay-route.js';
import type { TopologyNames } from '../topology/topology-names.js';
import { RelayError } from '../errors.js';
import { isClosed } from '../amqp/publish-confirmed.js';
import { publishCopy, type Copy, type CopyFailure, type CopyResult } from './publish-copy.js';

/** What the relay knows about a callback's attempts so far, written into retry and DLQ headers. */
export interface AttemptRecord {
  id: string;
  /** Attempts made, this one included (0 for a message that could not be decoded). */
  attempts: number;
  firstAttemptAt: string | undefined;
  lastAttemptAt: string | undefined;
  lastStatus: number | undefined;
  lastError: string | undefined;
  /** The callback's resolved policy, carried forward in the copy's headers; absent without one. */
  policy?: MessagePolicy | undefined;
}
/**
 * Hold a paused target's callback: move it, unattempted, to `queue` (P.paused; from P.paused.check,
 * back there or to its lane), its headers as they are, attempt count included.
 */
export interface Hold {
  kind: 'hold';
  queue: string;
}

/** What settle carries out: the retry policy's decision, or a hold. */
export type Settlement = Decision | Hold;

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

/** How long a callback whose hold failed stays unacked before it goes back to its queue: no hot loop. */
const REQUEUE_HOLD_AFTER_MS = 1_000;

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
  /** How long a copy may wait for the broker's confirm (PUBLISH_TIMEOUT). */
  confirmTimeoutMs?: number;
  /** Declares the whole topology again; asked for when a copy came back unroutable or nacked. */
  redeclare?: () => Promise<void>;
  /** EVENTS=durable: stores the outcome's event (see storeEventFirst and storeEventAfter). */
  storeEvent?: StoreEvent;
  /** Told when a retry's event could not be stored (the retry itself was). */
  onEventLost?: (error: Error) => void;
}

/** What a hold needs of the context: no route (it goes to a named queue), no attempt record. */
export type HoldContext = Pick<SettleContext, 'channel' | 'message' | 'confirmTimeoutMs' | 'redeclare' | 'storeEvent' | 'onConfirm' | 'onFallback' | 'onEventLost'>;

/** Publishes an outcome's event and waits for its confirm; `rejected` when no copy was stored and the original goes to P.dead. */
export type StoreEvent = (rejected: boolean) => Promise<CopyResult>;

/**
 * Step 5: carry out a decision. A retry or dead-letter copy is published and confirmed by the
 * broker (and not returned as unroutable) before the original is acked, so a crash in between
 * duplicates a callback but never loses one.
 *
 * When the copy cannot be stored on a live channel (returned, nacked, no confirm in time, headers too
 * large), the topology is declared again and a returned or nacked copy published once more; if that
 * fails too, the original is rejected without requeue and the broker dead-letters it to P.dead (both
 * consumed queues name P.dead as their dead-letter target). Resolves `true` when the decision was
 * carried out, `false` when the original was rejected (or, for a hold, requeued) instead. Throws if
 * the channel is gone: the broker then redelivers the original.
 *
 * A hold is settled the same way, with one difference: a copy it cannot store sends the original
 * back to its own queue, a second later (so a missing holding queue does not make the broker hand it
 * straight back in a loop), and never to P.dead. A hold spends no attempt and decides nothing about the
 * callback: parking it in P.dead would turn a pause into lost callbacks, while sending it back only
 * means it is met (and held) again.
 *
 * EVENTS=durable: a final outcome's event (`delivered`, `dead`) and a hold's `paused` event are stored
 * before anything else, so an event that cannot be stored sends the original back to its queue while
 * no copy of it exists yet. A retry's event (`retry-scheduled`, not final) follows its copy and never
 * holds the ack back: sending the original back then would run the callback twice, and its later
 * attempts report again.
 */
export function settle(settlement: Hold, record: Pick<AttemptRecord, 'id'>, context: HoldContext): Promise<boolean>;
export function settle(settlement: Settlement, record: AttemptRecord, context: SettleContext): Promise<boolean>;
export async function settle(settlement: Settlement, record: Pick<AttemptRecord, 'id'>, context: HoldContext): Promise<boolean> {
  const { channel, message } = context;
  if (settlement.kind !== 'retry') await storeEventFirst(context, false);
  if (settlement.kind === 'ack') {
    channel.ack(message);
    return true;
  }
  const copy = copyOf(settlement, record, context);
  const started = performance.now();
  const timeoutMs = context.confirmTimeoutMs ?? DEFAULT_CONFIRM_TIMEOUT_MS;
  const result = await publishOnceMore(context, () => publishCopy(channel, copy, message, record.id, timeoutMs));
  if (result.stored) {
    if (settlement.kind !== 'hold') context.onConfirm?.(settlement.kind, (performance.now() - started) / 1000);
    if (settlement.kind === 'retry') await storeEventAfter(context);
    channel.ack(message);
    return true;
  }
  const fallback: SettleFallback = { id: record.id, kind: settlement.kind, cause: result.cause, error: result.error };
  if (settlement.kind === 'hold') {
    context.onFallback?.(fallback);
    await new Promise((resolve) => setTimeout(resolve, REQUEUE_HOLD_AFTER_MS));
    // Throws on a channel that closed meanwhile: the broker has requeued the original already.
    channel.nack(message, false, true);
    return false;
  }
  // No copy: the original goes to P.dead by rejection. Its final event says so (a dead copy's is stored already).
  if (settlement.kind === 'retry') await storeEventFirst(context, true);
  // Throws on a channel that closed meanwhile: the broker redelivers the original instead.
  channel.nack(message, false, false);
  context.onFallback?.(fallback);
  return false;
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
 * EVENTS=durable, a final outcome: its event is confirmed before the message is acked, rejected or
 * copied. An event that cannot be stored on a live channel sends the message back to its queue, so it
 * is neither settled without its event nor left unacked: it is attempted again, its event published again.
 */
async function storeEventFirst(context: HoldContext, rejected: boolean): Promise<void> {
  const { storeEvent, channel, message } = context;
  if (!storeEvent) return;
  const result = await publishOnceMore(context, () => storeEvent(rejected));
  if (result.stored) return;
  channel.nack(message, false, true);
  throw new RelayError('CR_ERR_EVENT_NOT_STORED', `the outcome event was not stored (${result.cause}: ${result.error.message}); the message went back to its queue`, { cause: result.error });
}

/**
 * EVENTS=durable, a retry stored: its `retry-scheduled` event, best effort. Not stored, it is reported
 * to the context and the original acked all the same: its copy already carries the callback on.
 */
async function storeEventAfter(context: HoldContext): Promise<void> {
  if (!context.storeEvent) return;
  const result = await publishOnceMore(context, () => (context.storeEvent as StoreEvent)(false));
  if (!result.stored) context.onEventLost?.(result.error);
}

/** The copy a settlement publishes: its route, and the headers that carry the retry state. */
function copyOf(settlement: Exclude<Settlement, { kind: 'ack' }>, record: Pick<AttemptRecord, 'id'>, context: HoldContext): Copy {
  // Unchanged but for what dead-lettering added (P.paused → P.paused.check): holding spends no attempt.
  if (settlement.kind === 'hold') return toQueue(settlement.queue, carriedHeaders(context.message.properties.headers));
  // Only a hold is settled without a route and a record (settle's overloads).
  return decisionCopy(settlement, record as AttemptRecord, context as SettleContext);
}

function decisionCopy(settlement: Exclude<Decision, { kind: 'ack' }>, record: AttemptRecord, context: SettleContext): Copy {
  const { message, names, mode } = context;
  switch (settlement.kind) {
    case 'retry': {
      const route = deliveryRoute(names, mode, settlement.delayMs, context.bucket, Date.now());
      return viaRoute(route, { ...recordHeaders(message, record), ...route.headers, [HEADER.attempt]: settlement.attempt }, context);
    }
    case 'dead':
      return toQueue(names.deadQueue, { ...recordHeaders(message, record), [HEADER.reason]: settlement.reason, [HEADER.attempts]: record.attempts });
  }
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
  const put = (name: string, value: unknown): void => {
    if (value !== undefined) headers[name] = value;
  };
  put(HEADER.firstAttemptAt, record.firstAttemptAt);
  put(HEADER.lastAttemptAt, record.lastAttemptAt);
  put(HEADER.lastStatus, record.lastStatus);
  put(HEADER.lastError, record.lastError);
  if (record.policy) Object.assign(headers, policyHeaders(record.policy));
  return headers;
}
