/**
 * The size of an AMQP header table once encoded, as amqplib encodes it, so a table too large to
 * publish is caught before `publish` is called.
 *
 * amqplib encodes every header table into one fixed 64 KiB scratch buffer. A larger table either
 * throws `RangeError` from inside `ConfirmChannel.publish`, after the confirm callback was queued
 * (every later confirm on the channel is then matched to the wrong publish), or is silently cut
 * short by `Buffer.write` and sent as a corrupt frame that makes the broker close the connection.
 */
export const AMQP_HEADER_TABLE_LIMIT = 65_536;

/**
 * The largest header table a producer may send with a callback: the copies the relay publishes add
 * their own `x-callback-*` headers (the last error is capped at 500 characters), which must still fit
 * under AMQP_HEADER_TABLE_LIMIT.
 */
export const MAX_PRODUCER_HEADER_BYTES = 60 * 1_024;

/** Encoded bytes of `headers` as a field table; an upper bound where amqplib picks a number's width. */
export function headerTableSize(headers: Record<string, unknown> | undefined): number {
  let size = 4;
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) size += 1 + Buffer.byteLength(name) + fieldValueSize(value);
  }
  return size;
}

function fieldValueSize(value: unknown): number {
  // amqplib's typed-value trapdoor: { '!': 'int32', value: 5 }.
  if (typeof value === 'object' && value !== null && Object.prototype.hasOwnProperty.call(value, '!')) {
    const typed = (value as { value: unknown }).value;
    return typeof typed === 'string' || Buffer.isBuffer(typed) || typeof typed === 'object' ? fieldValueSize(typed) : 9;
  }
  switch (typeof value) {
    case 'string':
      return 5 + Buffer.byteLength(value);
    case 'boolean':
      return 2;
    case 'number':
    case 'bigint':
      return 9;
    case 'object':
      if (value === null) return 1;
      if (Buffer.isBuffer(value)) return 5 + value.length;
      if (Array.isArray(value)) return 5 + value.reduce((sum: number, item) => sum + fieldValueSize(item), 0);
      return 1 + headerTableSize(value as Record<string, unknown>);
    default:
      // Nothing amqplib can encode: count its text so an absurd value is never taken for a small one.
      return 5 + Buffer.byteLength(String(value));
  }
}
