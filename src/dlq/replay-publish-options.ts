import type { Options } from 'amqplib';
import { withoutBrokerHeaders } from '../message/broker-headers.js';
import { HEADER } from '../message/headers.js';

/**
 * The headers of a replayed copy: the producer's own, without any `x-callback-*` retry state or DLQ
 * record, without what the broker added, and without `x-delay`, which would hold it back in plugin
 * mode. With no `x-callback-attempt` the worker counts the next delivery as attempt 1, so the full
 * retry schedule applies again.
 */
export const replayHeaders = (headers: Record<string, unknown> | undefined): Record<string, unknown> =>
  withoutBrokerHeaders(headers, (name) => {
    const lower = name.toLowerCase();
    return lower.startsWith('x-callback-') || lower === HEADER.delay;
  });

/**
 * AMQP properties of a replayed copy, as the wire contract asks of any producer: persistent, JSON,
 * message_id = the callback id (kept, so receivers can deduplicate on webhook-id). The original
 * timestamp is kept so the copy still tells when the callback was first published.
 */
export function replayPublishOptions(
  properties: { headers?: Record<string, unknown> | undefined; timestamp?: unknown },
  id: string | null,
  replayedAt?: string,
): Options.Publish {
  const headers = replayHeaders(properties.headers);
  // A cancel marker written before the replay does not park the replayed copy (src/control/).
  if (replayedAt !== undefined) headers[HEADER.replayedAt] = replayedAt;
  const options: Options.Publish = { persistent: true, contentType: 'application/json', headers };
  if (id !== null) options.messageId = id;
  if (typeof properties.timestamp === 'number') options.timestamp = properties.timestamp;
  return options;
}
