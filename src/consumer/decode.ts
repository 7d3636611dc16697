import type { ConsumeMessage } from 'amqplib';
import { RelayError } from '../errors.js';
import { parseCallback, type Callback } from '../message/callback.js';
import { callbackId } from '../message/callback-id.js';
import { derivedId } from '../message/derived-id.js';
import { headerTableSize, MAX_PRODUCER_HEADER_BYTES } from '../message/header-table-size.js';
import { HEADER, readAttempt, readString } from '../message/headers.js';
import { carriesPolicy, readPolicyHeaders } from '../config/policy-headers.js';
import type { MessagePolicy, RetryPolicies } from '../policy/message-policy.js';
import type { CallbackState } from '../policy/schedule-end.js';
import { readTraceContext, type TraceContext } from '../tracing/trace-context.js';

/**
 * A decoded, valid callback and the retry state its headers carry (`CallbackState`: what the retry
 * rules of src/policy read). Every header the later steps need is read here, once.
 */
export interface Delivery extends CallbackState {
  callback: Callback;
  /** `callback.url`, parsed. */
  url: URL;
  /** The request body: `callback.body` serialised once, here, so deliver cannot fail on it. */
  payload: string;
  /** How often an open circuit deferred this attempt so far (`x-callback-deferrals`); absent: never. */
  deferrals?: number | undefined;
  /** A copy replayed from P.dead: when (`x-replayed-at`, ISO time); a cancel marker written before it does not apply to it. */
  replayedAt?: string | undefined;
  /** The trace context published with it (W3C `traceparent`/`tracestate` AMQP headers), carried through retries. */
  trace?: TraceContext | undefined;
  /** An ordered callback the relay put back in its shard: a held head's copy, or a follower from the log (policy/key-order.ts). */
  orderStamp?: OrderStamp | undefined;
}

export type OrderStamp = { kind: 'copy' } | { kind: 'from'; offset: number; seq?: number };

export type Decoded = { ok: true; delivery: Delivery } | { ok: false; id: string; attempt: number; error: string };

/**
 * Step 1: message → delivery. Never throws: a message that is too large, not JSON, not a valid
 * callback or naming a policy the worker cannot resolve comes back as `{ ok: false }` with the
 * reason, for the dead-letter queue.
 */
export function decode(message: ConsumeMessage, maxPayloadBytes: number, policies?: RetryPolicies): Decoded {
  const headers = message.properties.headers;
  const attempt = readAttempt(headers);
  // Without a valid id, one derived from the message: the same on every redelivery of it.
  const idOf = (bodyId: string | undefined): string => callbackId(bodyId, message.properties.messageId) ?? derivedId(message);
  const failed = (error: string): Decoded => ({ ok: false, id: idOf(undefined), attempt, error });
  if (message.content.length > maxPayloadBytes) {
    return failed(`message is ${message.content.length} bytes, over the limit of ${maxPayloadBytes} (MAX_PAYLOAD_BYTES)`);
  }
  const headerBytes = headerTableSize(headers);
  if (headerBytes > MAX_PRODUCER_HEADER_BYTES) {
    // The relay could not publish a retry copy of it: the header table of a copy must fit in 64 KiB.
    return failed(`headers are ${headerBytes} bytes encoded, over the limit of ${MAX_PRODUCER_HEADER_BYTES}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.content.toString('utf8'));
  } catch (error) {
    return failed(`not JSON: ${(error as Error).message}`);
  }
  let callback: Callback;
  let url: URL;
  try {
    ({ callback, url } = parseCallback(parsed));
  } catch (error) {
    return failed((error as Error).message);
  }
  let payload: string;
  try {
    // JSON.parse accepts nesting deep enough for JSON.stringify to overflow the stack.
    payload = JSON.stringify(callback.body);
  } catch (error) {
    return failed(`body: cannot be serialised (${(error as Error).message})`);
  }
  let policy: MessagePolicy | undefined;
  if (callback.policy !== undefined) {
    try {
      policy = policyOf(callback.policy, headers, policies);
    } catch (error) {
      return failed((error as Error).message);
    }
  }
  const id = idOf(callback.id);
  return {
    ok: true,
    delivery: {
      id,
      callback,
      url,
      payload,
      attempt,
      firstAttemptAt: readString(headers, HEADER.firstAttemptAt),
      ...heldOf(headers),
      policy,
      trace: readTraceContext(headers),
      replayedAt: readString(headers, HEADER.replayedAt),
      orderStamp: orderStampOf(headers),
    },
  };
}

/** A shard's wake (ordered-keys.ts): no callback, only a knock for the shard's active consumer. */
export const isOrderWake = (headers: Record<string, unknown> | undefined): boolean => headers?.[HEADER.orderWake] !== undefined;

/** An operator's release of a stopped key: the key it names, if the message is one. */
export function orderReleaseOf(headers: Record<string, unknown> | undefined): string | undefined {
  const key = headers?.[HEADER.orderRelease];
  return typeof key === 'string' ? key : Buffer.isBuffer(key) ? key.toString('utf8') : undefined;
}

/** The relay's own stamps on an ordered callback; an unreadable one counts as none. */
function orderStampOf(headers: Record<string, unknown> | undefined): OrderStamp | undefined {
  const offset = offsetOf(headers?.[HEADER.orderFrom]);
  const seq = offsetOf(headers?.[HEADER.orderSeq]);
  if (offset !== undefined) return seq === undefined ? { kind: 'from', offset } : { kind: 'from', offset, seq };
  return headers?.[HEADER.orderCopy] === undefined ? undefined : { kind: 'copy' };
}

/** A stream offset in a header, if it reads as one. */
function offsetOf(value: unknown): number | undefined {
  const n = typeof value === 'bigint' ? Number(value) : typeof value === 'number' ? value : Number.NaN;
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** What open circuits' holds left in the headers: this attempt's start of hold and deferrals, and the earlier attempts' total. */
function heldOf(headers: Record<string, unknown> | undefined): Pick<Delivery, 'heldSince' | 'heldMs' | 'deferrals'> {
  const since = Date.parse(readString(headers, HEADER.heldSince) ?? '');
  const ms = Number(headers?.[HEADER.heldMs]);
  const deferrals = Number(headers?.[HEADER.deferrals]);
  return {
    heldSince: Number.isNaN(since) ? undefined : since,
    heldMs: Number.isFinite(ms) && ms > 0 ? ms : undefined,
    deferrals: Number.isInteger(deferrals) && deferrals > 0 ? deferrals : undefined,
  };
}

/**
 * Queues mode: when the message is due (HEADER.dueAt, ms since the epoch, the publisher's clock), read
 * when it arrives, before the pipeline, to hold it until then (hold-until-due.ts). A 64-bit integer
 * header arrives as a bigint; anything else unreadable is no due time (bad input is never held).
 */
export function dueAtOf(headers: Record<string, unknown> | undefined): number | undefined {
  const raw = headers?.[HEADER.dueAt];
  const dueAt = typeof raw === 'number' ? raw : typeof raw === 'bigint' ? Number(raw) : Number.NaN;
  return Number.isFinite(dueAt) ? dueAt : undefined;
}

/**
 * A policy resolved at an earlier attempt travels in the headers, and they decide: workers whose
 * files differ never disagree about a message in flight. Otherwise this worker's file resolves it.
 */
function policyOf(name: string, headers: Record<string, unknown> | undefined, policies: RetryPolicies | undefined): MessagePolicy {
  if (policies && headers && carriesPolicy(headers)) return readPolicyHeaders(name, headers, policies.defaults);
  const policy = policies?.byName.get(name);
  if (policy) return policy;
  throw new RelayError(
    'CR_ERR_INVALID_CALLBACK',
    `policy: ${JSON.stringify(name)} is not a retry policy of this worker (RETRY_POLICIES_FILE)`,
    { field: 'policy' },
  );
}
