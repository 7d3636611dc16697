import type { Options } from 'amqplib';
import { HEADER } from '../message/headers.js';

/**
 * Headers the broker adds (dead-lettering, quorum delivery counts) and `x-delay`. A replay drops them
 * so the copy starts clean; `x-delay` in particular would hold it back in plugin mode.
 */
const BROKER_HEADERS = new Set([
  'x-death',
  'x-first-death-exchange',
  'x-first-death-queue',
  'x-first-death-reason',
  'x-last-death-exchange',
  'x-last-death-queue',
  'x-last-death-reason',
  'x-delivery-count',
  'x-acquired-count',
  'x-delay',
]);

/**
 * The headers of a replayed copy: the producer's own, without any `x-callback-*` retry state or DLQ
 * record and without what the broker added. With no `x-callback-attempt` the worker counts the next
 * delivery as attempt 1, so the full retry schedule applies again.
 */
export function replayHeaders(headers: Record<string, unknown> | undefined): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const lower = name.toLowerCase();
    if (!lower.startsWith('x-callback-') && !BROKER_HEADERS.has(lower)) kept[name] = value;
  }
  return kept;
}

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
