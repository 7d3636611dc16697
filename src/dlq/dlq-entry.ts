import { maskUrl } from '../formats/mask-url.js';
import { callbackId } from '../message/callback-id.js';
import { HEADER, readString } from '../message/headers.js';

/** The parts of a message in P.dead that an entry is read from; an amqplib `GetMessage` fits. */
export interface DeadMessage {
  content: Buffer;
  properties: { messageId?: unknown; timestamp?: unknown; headers?: Record<string, unknown> | undefined };
}

/** One parked callback as `dlq list` shows it. `null` wherever the message does not say. */
export interface DlqEntry {
  /** The callback id (sent as webhook-id) as the worker reads it (message/callback-id.ts). */
  id: string | null;
  /** The callback's URL as people may read it (maskUrl); replay sends the message itself, full URL and all. */
  url: string | null;
  /** `x-callback-reason`, else the broker's x-death reason (e.g. `delivery_limit`), else `unknown`. */
  reason: string;
  attempts: number | null;
  lastStatus: number | null;
  lastError: string | null;
  /** ISO time the age counts from: the last attempt, else the message's AMQP timestamp. */
  since: string | null;
  ageSeconds: number | null;
}

/** Reads a DLQ entry from a message. Pure: never throws, whatever the content. */
export function dlqEntry(message: DeadMessage, now: Date): DlqEntry {
  const headers = message.properties.headers;
  const body = parseBody(message.content);
  const since = lastAttemptAt(headers) ?? timestampOf(message.properties.timestamp);
  return {
    id: callbackId(body?.id, message.properties.messageId) ?? null,
    url: typeof body?.url === 'string' ? maskUrl(body.url) : null,
    reason: readString(headers, HEADER.reason) ?? brokerReason(headers) ?? 'unknown',
    attempts: readNumber(headers, HEADER.attempts),
    lastStatus: readNumber(headers, HEADER.lastStatus),
    lastError: readString(headers, HEADER.lastError) ?? null,
    since: since?.toISOString() ?? null,
    ageSeconds: since === undefined ? null : Math.max(0, Math.floor((now.getTime() - since.getTime()) / 1000)),
  };
}

/** The body as a JSON object, or `undefined` when it is not one (an `invalid` callback may be anything). */
export function parseBody(content: Buffer): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(content.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why the broker dead-lettered a message it parked by itself. x-death lists the most recent event
 * first, so its head is what moved the message into P.dead (e.g. `delivery_limit` from P.work).
 */
function brokerReason(headers: Record<string, unknown> | undefined): string | undefined {
  const deaths = headers?.['x-death'];
  if (Array.isArray(deaths) && typeof deaths[0] === 'object' && deaths[0] !== null) {
    const reason = readString(deaths[0] as Record<string, unknown>, 'reason');
    if (reason !== undefined) return reason;
  }
  return readString(headers, 'x-last-death-reason') ?? readString(headers, 'x-first-death-reason');
}

function readNumber(headers: Record<string, unknown> | undefined, name: string): number | null {
  const value = headers?.[name];
  const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  return Number.isFinite(number) ? number : null;
}

function lastAttemptAt(headers: Record<string, unknown> | undefined): Date | undefined {
  const text = readString(headers, HEADER.lastAttemptAt);
  const date = text === undefined ? undefined : new Date(text);
  return date !== undefined && Number.isFinite(date.getTime()) ? date : undefined;
}

/** The AMQP timestamp property is in whole seconds since the epoch (the publisher sets it). */
function timestampOf(value: unknown): Date | undefined {
  const seconds = typeof value === 'number' ? value : (value as { value?: unknown } | null)?.value;
  return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : undefined;
}
