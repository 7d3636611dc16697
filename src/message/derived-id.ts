import { createHash } from 'node:crypto';
import { carriedHeaders, isLogHeader } from './headers.js';

/** What a message looks like to `derivedId`: its body and the properties a producer set. */
export interface IdSource {
  content: Buffer;
  properties: { headers?: Record<string, unknown>; timestamp?: unknown; correlationId?: unknown; appId?: unknown; type?: unknown };
}

/**
 * The id of a callback published with neither `id` nor `message_id`: a hash of its body and of the
 * properties its producer set, so every redelivery of the same message gets the same `webhook-id`
 * and a receiver can deduplicate. Broker-added headers (x-death, x-delivery-count…) are left out:
 * they change between deliveries; so are log headers (`isLogHeader`), which an ordered callback's log
 * drops. Two identical messages published without ids share it; a producer that means two events
 * gives them ids.
 */
export function derivedId(message: IdSource): string {
  const { headers, timestamp, correlationId, appId, type } = message.properties;
  const stable = JSON.stringify(
    [timestamp ?? null, correlationId ?? null, appId ?? null, type ?? null, ownHeaders(headers)],
    (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value),
  );
  const hash = createHash('sha256').update(stable).update('\n').update(message.content).digest('base64url');
  return `msg_${hash}`;
}

const ownHeaders = (headers: Record<string, unknown> | undefined): Record<string, unknown> =>
  Object.fromEntries(Object.entries(carriedHeaders(headers)).filter(([name]) => !isLogHeader(name)));
