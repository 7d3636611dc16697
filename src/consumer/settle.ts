import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { HEADER, carriedHeaders } from '../message/headers.js';
import type { Decision } from '../policy/decide.js';
import type { DelayMode } from '../topology/delay-mode.js';
import { deliveryRoute } from '../topology/delay-route.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** What the relay knows about a callback's attempts so far, written into retry and DLQ headers. */
export interface AttemptRecord {
  id: string;
  /** Attempts made, this one included (0 for a message that could not be decoded). */
  attempts: number;
  firstAttemptAt: string | undefined;
  lastAttemptAt: string | undefined;
  lastStatus: number | undefined;
  lastError: string | undefined;
}

/** A decision of the retry policy. */
export type Settlement = Decision;

export interface SettleContext {
  /** Told how long each confirm took. */
  onConfirm?: (kind: 'retry' | 'dead', seconds: number) => void;
  channel: ConfirmChannel;
  message: ConsumeMessage;
  names: TopologyNames;
  mode: DelayMode;
  /** The message's lane bucket: a retry goes back to its own lane. */
  bucket: number;
}

/**
 * Step 4: carry out a decision. A retry or dead-letter copy is published and confirmed by the broker
 * before the original is acked, so a crash in between duplicates a callback but never loses one.
 * Throws if the channel is gone; the broker then redelivers the original to another consumer.
 */
export async function settle(settlement: Settlement, record: AttemptRecord, context: SettleContext): Promise<void> {
  const { channel, message, names, mode } = context;
  const started = performance.now();
  if (settlement.kind === 'retry') {
    const route = deliveryRoute(names, mode, settlement.delayMs, context.bucket);
    const headers = { ...recordHeaders(message, record), ...route.headers, [HEADER.attempt]: settlement.attempt };
    await publishConfirmed(channel, route.exchange, route.routingKey, message, record.id, headers);
  } else if (settlement.kind === 'dead') {
    const headers = { ...recordHeaders(message, record), [HEADER.reason]: settlement.reason, [HEADER.attempts]: record.attempts };
    await publishConfirmed(channel, '', names.deadQueue, message, record.id, headers);
  }
  if (settlement.kind !== 'ack') context.onConfirm?.(settlement.kind, (performance.now() - started) / 1000);
  channel.ack(message);
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
  return headers;
}

function publishConfirmed(
  channel: ConfirmChannel,
  exchange: string,
  routingKey: string,
  message: ConsumeMessage,
  id: string,
  headers: Record<string, unknown>,
): Promise<void> {
  const { contentType, timestamp } = message.properties;
  const options: Options.Publish = { persistent: true, messageId: id, contentType: contentType ?? 'application/json', headers };
  if (timestamp !== undefined) options.timestamp = timestamp;
  return new Promise((resolve, reject) => {
    channel.publish(exchange, routingKey, message.content, options, (error) => (error ? reject(error) : resolve()));
  });
}
