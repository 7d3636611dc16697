import type { Options } from 'amqplib';

/**
 * Returns after which a peeked message is put back as a fresh copy instead of being requeued.
 *
 * Why: since RabbitMQ 4.0 every quorum queue has a default delivery limit of 20, P.dead included,
 * and P.dead has no dead-letter exchange, so a message past the limit is dropped. On 4.0–4.2 every
 * return counts toward it (a `dlq list` is one); from 4.3 an explicit nack does not, but a channel
 * that dies holding the message does. The broker reports the count in `x-delivery-count`.
 * Half the default limit leaves room for interrupted runs. See
 * https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling
 */
export const REFRESH_AFTER_RETURNS = 10;

/** Whether a message taken from P.dead should be republished (copy, confirm, ack) rather than nacked. */
export function needsRefresh(headers: Record<string, unknown> | undefined): boolean {
  const count = Number(headers?.['x-delivery-count']);
  return Number.isFinite(count) && count >= REFRESH_AFTER_RETURNS;
}

/**
 * Properties of the fresh copy: the message as it was, minus the broker's delivery counters (a new
 * message starts at 0, and a stale header would mislead whoever reads it next). `userId` is left out
 * because the broker refuses a publish whose user-id is not the connection's user.
 */
export function refreshPublishOptions(properties: {
  headers?: Record<string, unknown> | undefined;
  contentType?: unknown;
  contentEncoding?: unknown;
  messageId?: unknown;
  correlationId?: unknown;
  timestamp?: unknown;
  type?: unknown;
  appId?: unknown;
}): Options.Publish {
  const headers: Record<string, unknown> = { ...properties.headers };
  delete headers['x-delivery-count'];
  delete headers['x-acquired-count'];
  const options: Options.Publish = { persistent: true, headers };
  const text = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
  if (text(properties.contentType) !== undefined) options.contentType = text(properties.contentType);
  if (text(properties.contentEncoding) !== undefined) options.contentEncoding = text(properties.contentEncoding);
  if (text(properties.messageId) !== undefined) options.messageId = text(properties.messageId);
  if (text(properties.correlationId) !== undefined) options.correlationId = text(properties.correlationId);
  if (text(properties.type) !== undefined) options.type = text(properties.type);
  if (text(properties.appId) !== undefined) options.appId = text(properties.appId);
  if (typeof properties.timestamp === 'number') options.timestamp = properties.timestamp;
  return options;
}
