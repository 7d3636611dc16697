import { isValidId } from './callback.js';

/**
 * The one rule for a callback's id, sent as `webhook-id`: the body's `id` when it is a valid id, else
 * the AMQP message_id when that is one (it becomes a header, so nothing else is used); else
 * `undefined`, and the worker derives one from the message (derived-id.ts). The worker (decode.ts)
 * and the DLQ commands (dlq-entry.ts) both read ids by it, so a replay keeps the webhook-id
 * receivers deduplicate on.
 */
export function callbackId(bodyId: unknown, messageId: unknown): string | undefined {
  if (typeof bodyId === 'string' && isValidId(bodyId)) return bodyId;
  if (typeof messageId === 'string' && isValidId(messageId)) return messageId;
  return undefined;
}
