import { withoutBrokerHeaders } from './broker-headers.js';

/**
 * AMQP header names of the wire contract. Retry state travels here, never in the message body, so the
 * body a producer published is the body that reaches the DLQ, byte for byte.
 */
export const HEADER = {
  /** On P.work messages: the number of the attempt this delivery will be (absent = 1). */
  attempt: 'x-callback-attempt',
  firstAttemptAt: 'x-callback-first-attempt-at',
  lastAttemptAt: 'x-callback-last-attempt-at',
  lastStatus: 'x-callback-last-status',
  lastError: 'x-callback-last-error',
  /** On P.dead messages: `exhausted` | `rejected` | `invalid` | `forbidden-target` | `canceled` | `unsettled`. */
  reason: 'x-callback-reason',
  /** On P.dead messages: attempts made. */
  attempts: 'x-callback-attempts',
  /** On a copy replayed from P.dead: when (ISO time). A cancel marker written before it does not apply to it. */
  replayedAt: 'x-replayed-at',
  /**
   * Queues mode: when a delayed copy is due (ms since the epoch, the publisher's clock). The levels let
   * it out up to a second early, and the worker holds it until then (consumer/hold-until-due.ts).
   */
  dueAt: 'x-callback-due-at',
  /** Plugin mode: the delay in ms, read by the x-delayed-message exchange. */
  delay: 'x-delay',
  /**
   * On a message a worker sent back to its own queue because it could not settle it: how many times
   * (settle/send-back.ts). The relay's own count: from RabbitMQ 4.3 a requeue no longer counts toward a
   * quorum queue's delivery limit, and classic queues have none.
   */
  returns: 'x-callback-returns',
  /** On every copy a worker publishes: a token unique to that publish, matching a broker return to it. */
  copy: 'x-callback-copy',
  /**
   * On the copies of a callback with a `policy`: the policy as the worker of its first attempt resolved
   * it (config/policy-headers.ts). Later attempts follow these, never their own worker's RETRY_POLICIES_FILE.
   */
  policy: 'x-callback-policy',
  schedule: 'x-callback-schedule',
  maxAttempts: 'x-callback-max-attempts',
  timeout: 'x-callback-timeout',
  successBody: 'x-callback-success-body',
  /**
   * On a callback deferred because its target's circuit was open: when its attempt first came due (ISO
   * time), and how often it was deferred. Once it has waited an attempt's timeout it is owed its request.
   */
  heldSince: 'x-callback-held-since',
  deferrals: 'x-callback-deferrals',
  /**
   * How long open circuits have held the callback past the times its attempts came due, over all its
   * attempts made so far (ms): the end of its schedule comes that much sooner, so holding it never makes
   * it outlast the schedule. Retries and dead-letter copies carry it.
   */
  heldMs: 'x-callback-held-ms',
  /**
   * Ordered callbacks (docs/ordering.md), stamps of one publish: `orderCopy` on a held head's copy back
   * from the delay path; `orderFrom` on a follower the shard's owner took from its log (the log offset).
   */
  orderCopy: 'x-callback-order-copy',
  orderFrom: 'x-callback-order-from',
  /** With `orderFrom`: the offset the follower was first logged at (a copy's differs from where it was read). */
  orderSeq: 'x-callback-order-seq',
  /** A message without a callback that workers send each shard now and then, so that its active consumer takes it over. */
  orderWake: 'x-callback-order-wake',
  /** An operator's release of a stopped key (`callback-relay ordered release`): the key, sent into its shard. */
  orderRelease: 'x-callback-order-release',
} as const;

/** Per-publish headers: they belong to the one publish that set them, never to its copies. */
const PER_PUBLISH: ReadonlySet<string> = new Set([
  HEADER.delay,
  HEADER.copy,
  HEADER.dueAt,
  HEADER.orderCopy,
  HEADER.orderFrom,
  HEADER.orderSeq,
]);

/**
 * Headers the relay writes on an ordered key's log records (x-order-…) and those a stream adds as it is
 * read (x-stream-…): never a callback's own, so a producer's are dropped on the way to the log and no id
 * is derived from them.
 */
export const isLogHeader = (name: string): boolean => name.startsWith('x-order-') || name.startsWith('x-stream-');

/** A deferral's headers belong to one deferred attempt: moves carry them, a retry or dead-letter copy (a new record) does not. */
export const DEFERRAL_HEADERS: readonly string[] = [HEADER.heldSince, HEADER.deferrals];

/** Headers to carry into a republished copy: the producer's own and the retry state, minus what the broker or one publish added. */
export const carriedHeaders = (headers: Record<string, unknown> | undefined): Record<string, unknown> =>
  withoutBrokerHeaders(headers, (name) => PER_PUBLISH.has(name.toLowerCase()));

/** Reads how often a message was sent back unsettled (HEADER.returns); anything unreadable counts as 0. */
export function readReturns(headers: Record<string, unknown> | undefined): number {
  const value = Number(headers?.[HEADER.returns]);
  return Number.isInteger(value) && value >= 0 ? value : 0;
}

/** Reads the attempt number from headers; anything missing or unreadable counts as the first attempt. */
export function readAttempt(headers: Record<string, unknown> | undefined): number {
  const value = Number(headers?.[HEADER.attempt]);
  return Number.isInteger(value) && value >= 1 ? value : 1;
}

export function readString(headers: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = headers?.[name];
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return undefined;
}
