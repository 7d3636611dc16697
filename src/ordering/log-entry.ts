import type { Message } from 'amqplib';

/**
 * A shard log's record as a stream message, and back: the headers a stream does not keep as published
 * stored in one it does, the offset the broker adds and the log's own append token taken off, and the
 * callback properties a record keeps. Streams over AMQP 0.9.1: https://www.rabbitmq.com/docs/streams#consuming
 */

/** The broker's header on every delivery from a stream: the record's offset. */
export const OFFSET_HEADER = 'x-stream-offset';
/**
 * Reserved: the log's own token on each append, matching a broker return to its append exactly
 * (several appends are in flight on one channel). Stripped from the entries read back, so a
 * record's headers (a callback's `x-callback-copy` token included) come back as they were given.
 */
export const LOG_TOKEN_HEADER = 'x-order-log-append';

/**
 * Reserved: the record's headers whose values are tables, arrays, byte arrays or null, as JSON (a Buffer as
 * `{type: 'Buffer', data}`). A stream does not keep them as published over AMQP 0.9.1: RabbitMQ 3.10
 * drops tables and arrays, 4.3 reads a byte array back as a string. Every version keeps a string, so
 * the log stores them in one and puts them back when reading.
 */
export const LOG_TABLES_HEADER = 'x-order-log-tables';

/** The callback properties a record keeps: those the producer and the relay's copies set. */
const PROPERTY_KEYS = ['messageId', 'contentType', 'contentEncoding', 'timestamp', 'correlationId', 'type', 'appId', 'priority'] as const;

export interface LogEntry {
  /** The record's stream offset. */
  offset: number;
  headers: Record<string, unknown>;
  /** Only those set. Every record is stored persistent, as a stream stores everything. */
  properties: {
    messageId?: string;
    contentType?: string;
    contentEncoding?: string;
    timestamp?: number;
    correlationId?: string;
    type?: string;
    appId?: string;
    priority?: number;
  };
  body: Buffer;
}

/**
 * An offset as the broker sends it (amqplib gives a number; a bigint is taken as well), or
 * `undefined` when it is none: not a non-negative integer a number holds exactly.
 */
export function toOffset(value: unknown): number | undefined {
  if (typeof value === 'bigint') return value >= BigInt(0) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined;
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** What a stream may not keep as published: tables, arrays, byte arrays, and void (null) to be safe. */
const isTable = (value: unknown): boolean => typeof value === 'object';

/** The headers to store: tables, arrays, byte arrays and nulls moved into LOG_TABLES_HEADER. */
export function storedHeaders(headers: Record<string, unknown>): Record<string, unknown> {
  const tables = Object.entries(headers).filter(([, value]) => isTable(value));
  if (tables.length === 0) return headers;
  const stored = Object.fromEntries(Object.entries(headers).filter(([, value]) => !isTable(value)));
  return { ...stored, [LOG_TABLES_HEADER]: JSON.stringify(Object.fromEntries(tables)) };
}

/** The headers a record was appended with, from those stored; a LOG_TABLES_HEADER that is no JSON object stays as it is. */
export function appendedHeaders(stored: Record<string, unknown>): Record<string, unknown> {
  const { [LOG_TABLES_HEADER]: text, ...headers } = stored;
  if (typeof text !== 'string' && !Buffer.isBuffer(text)) return stored;
  try {
    const tables: unknown = JSON.parse(String(text), (_key, value: unknown) => {
      const tagged = value as { type?: unknown; data?: unknown } | null;
      return tagged?.type === 'Buffer' && Array.isArray(tagged.data) ? Buffer.from(tagged.data as number[]) : value;
    });
    return isTable(tables) && tables !== null && !Array.isArray(tables) && !Buffer.isBuffer(tables)
      ? { ...headers, ...(tables as Record<string, unknown>) }
      : stored;
  } catch {
    return stored;
  }
}

/** A delivery as an entry: without the offset header and the log's token, its tables back in place. */
export function toEntry(offset: number, message: Message): LogEntry {
  const { [OFFSET_HEADER]: _offset, [LOG_TOKEN_HEADER]: _token, ...stored } = (message.properties.headers ?? {}) as Record<string, unknown>;
  const headers = appendedHeaders(stored);
  const properties: Record<string, unknown> = {};
  for (const key of PROPERTY_KEYS) {
    const value: unknown = message.properties[key];
    if (value !== undefined && value !== null) properties[key] = value;
  }
  return { offset, headers, properties: properties as LogEntry['properties'], body: message.content };
}
