import { createHmac } from 'node:crypto';
import { RelayError } from '../errors.js';
import type { SigningKey } from '../formats/signing-secrets.js';

/**
 * The three Standard Webhooks request headers. A type alias, not an interface, so it stays assignable
 * to `Record<string, string>` and to undici's / Node's header types.
 */
export type SignedHeaders = {
  /** The callback id, unchanged across retries and DLQ replays (the receiver's idempotency key). */
  'webhook-id': string;
  /** This attempt's time, integer seconds since the Unix epoch. */
  'webhook-timestamp': string;
  /** One `v1,<base64 HMAC-SHA256>` per key, space-separated, in the order of `keys`. */
  'webhook-signature': string;
};

// Printable ASCII with no space at either end: HTTP parsers trim header whitespace and may decode other
// bytes as latin1, so any other id would reach the receiver as different bytes from the ones signed.
const HEADER_SAFE_ID = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/**
 * Signs one HTTP attempt per Standard Webhooks: HMAC-SHA256 over `${id}.${timestamp}.${body}` with
 * every key, base64, each prefixed `v1,`. Pure: the caller injects the time, and must send exactly
 * `body` (the same bytes) with the returned headers.
 *
 * Throws `CR_ERR_CONFIG` when `keys` is empty, `CR_ERR_INVALID_CALLBACK` (field `id`) when `id` is not
 * printable ASCII without surrounding spaces, and `RangeError` when `timestampSeconds` is not a
 * non-negative safe integer.
 *
 * @param keys - from {@link parseSigningSecrets} / {@link loadSigningSecrets}; all of them sign (rotation)
 * @param id - the callback id, sent as `webhook-id`
 * @param timestampSeconds - the attempt's time in whole seconds, e.g. `Math.floor(Date.now() / 1000)`
 * @param body - the exact request body; a string is signed as its UTF-8 bytes
 */
export function signCallback(keys: readonly SigningKey[], id: string, timestampSeconds: number, body: string | Buffer): SignedHeaders {
  if (keys.length === 0) throw new RelayError('CR_ERR_CONFIG', 'signCallback: no signing key given');
  if (!HEADER_SAFE_ID.test(id)) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', 'id: must be printable ASCII without leading or trailing spaces to be signed', {
      field: 'id',
    });
  }
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError(`signCallback: timestampSeconds must be a non-negative integer, got ${String(timestampSeconds)}`);
  }
  const timestamp = String(timestampSeconds);
  return {
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': keys.map((key) => `v1,${computeSignature(key.key, id, timestamp, body)}`).join(' '),
  };
}

/**
 * The bare base64 HMAC-SHA256 of `${id}.${timestamp}.${body}` (no `v1,` prefix). Shared by signing and
 * verification so both build the signed content the same way; `timestamp` is the header text as sent.
 *
 * @param key - the raw HMAC key (decoded secret)
 * @param id - the `webhook-id` value
 * @param timestamp - the `webhook-timestamp` value, as text
 * @param body - the exact body bytes; a string is taken as UTF-8
 */
export function computeSignature(key: Buffer, id: string, timestamp: string, body: string | Uint8Array): string {
  // Two updates instead of one concatenation: the body is not copied, whatever its size.
  return createHmac('sha256', key).update(`${id}.${timestamp}.`, 'utf8').update(body).digest('base64');
}
