import { RelayError } from '../errors.js';

export const METHODS = ['POST', 'PUT', 'PATCH'] as const;
export type CallbackMethod = (typeof METHODS)[number];

/** A callback as it travels in a message body (the wire contract). */
export interface Callback {
  /** Stable id, sent as `webhook-id`; defaults to the AMQP `message_id`, else one derived from the message (derived-id.ts). */
  id?: string;
  /** http or https target. */
  url: string;
  /** Any JSON value, sent as the request body. */
  body: unknown;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** Default POST. */
  method?: CallbackMethod;
  /** A retry policy of the workers' RETRY_POLICIES_FILE; absent: the workers' own settings. */
  policy?: string;
  /**
   * Callbacks with the same key are delivered in the order the broker accepted them, one at a time
   * (topology/topology-names.ts, orderBucket). Same rule as an id: 1-255 printable ASCII characters
   * without surrounding spaces. Absent: no order with any other callback.
   */
  orderKey?: string;
}

export const MAX_URL_LENGTH = 4_096;
/** An AMQP `message_id` is a short string: 255 bytes at most. */
export const MAX_ID_LENGTH = 255;
/** A policy name: what the producer can check without the workers' file (a name they lack is dead-lettered). */
const POLICY_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
export const isValidPolicyName = (name: string): boolean => POLICY_NAME.test(name);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Headers the relay owns: framing and hop-by-hop ones would corrupt the request, the rest are ours.
const RESERVED =
  /^(host|content-length|content-type|transfer-encoding|connection|keep-alive|upgrade|te|trailer|expect|proxy-.*|webhook-.*|x-callback-.*)$/i;

/** 1-255 printable ASCII characters without surrounding spaces: a valid header value and AMQP short string. */
export const isValidId = (id: string): boolean => id.length <= MAX_ID_LENGTH && /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(id);

const FIELDS: ReadonlySet<string> = new Set(['id', 'url', 'body', 'headers', 'method', 'policy', 'orderKey']);

const invalid = (field: string, problem: string): RelayError =>
  new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: ${problem}`, { field });

/**
 * Checks a decoded callback against the wire contract and returns it typed. Throws
 * `CR_ERR_INVALID_CALLBACK` with `field` set to the first offending field.
 */
export const validateCallback = (value: unknown): Callback => parseCallback(value).callback;

/** `validateCallback`, also returning the URL it parsed on the way, so nothing parses it again. */
export function parseCallback(value: unknown): { callback: Callback; url: URL } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('callback', 'must be a JSON object');
  const input = value as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!FIELDS.has(key)) throw invalid(key, 'is not a callback field (id, url, body, headers, method, policy, orderKey)');
  }
  const url = parseUrl(input.url);
  if (!('body' in input) || input.body === undefined) throw invalid('body', 'is required (any JSON value, null included)');
  // The id travels as the webhook-id header and is signed: printable ASCII, no surrounding spaces.
  if (input.id !== undefined && (typeof input.id !== 'string' || !isValidId(input.id))) {
    throw invalid('id', `must be 1-${MAX_ID_LENGTH} printable ASCII characters without surrounding spaces`);
  }
  if (input.method !== undefined && !METHODS.includes(input.method as CallbackMethod))
    throw invalid('method', `must be one of ${METHODS.join(', ')}`);
  if (input.headers !== undefined) validateHeaders(input.headers);
  if (input.policy !== undefined && (typeof input.policy !== 'string' || !isValidPolicyName(input.policy))) {
    throw invalid('policy', 'must be 1-64 letters, digits, ".", "_", ":" or "-", starting with a letter or digit');
  }
  // The key is hashed to its shard and may travel in headers and logs: the id's rule keeps it a short string.
  if (input.orderKey !== undefined && (typeof input.orderKey !== 'string' || !isValidId(input.orderKey))) {
    throw invalid('orderKey', `must be 1-${MAX_ID_LENGTH} printable ASCII characters without surrounding spaces`);
  }
  return { callback: input as unknown as Callback, url };
}

function parseUrl(url: unknown): URL {
  if (typeof url !== 'string' || url === '') throw invalid('url', 'is required and must be a string');
  if (url.length > MAX_URL_LENGTH) throw invalid('url', `is longer than ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid('url', `is not a valid URL: ${JSON.stringify(url.slice(0, 100))}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw invalid('url', `must be http or https, not ${parsed.protocol.slice(0, -1)}`);
  return parsed;
}

function validateHeaders(headers: unknown): void {
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers))
    throw invalid('headers', 'must be an object of name → string value');
  for (const [name, value] of Object.entries(headers)) {
    const field = `headers.${name}`;
    if (!TOKEN.test(name)) throw invalid(field, 'is not a valid header name');
    if (RESERVED.test(name)) throw invalid(field, 'is set by the relay and cannot be overridden');
    if (typeof value !== 'string') throw invalid(field, 'must be a string');
    if (/[\r\n\0]/.test(value)) throw invalid(field, 'must not contain CR, LF or NUL');
    // What an HTTP client accepts in a field value: tab, visible ASCII, space and obs-text.
    if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) throw invalid(field, 'must contain only tab, printable ASCII or Latin-1 characters');
    if (value.length > 8_192) throw invalid(field, 'is longer than 8192 characters');
  }
}
