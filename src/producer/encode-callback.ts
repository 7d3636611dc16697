import { randomUUID } from 'node:crypto';
import { RelayError } from '../errors.js';
import { parseCallback, type Callback } from '../message/callback.js';

export interface EncodedCallback {
  id: string;
  content: Buffer;
  /** The callback's URL as validation parsed it, so the caller need not parse it again. */
  url: URL;
}

/**
 * Validates and serialises a callback exactly as the wire contract says, or throws
 * `CR_ERR_INVALID_CALLBACK` naming the field. Nothing is published for a callback that fails here.
 * A `policy` is checked for its shape only: the producer cannot see the workers' RETRY_POLICIES_FILE,
 * so a name they lack is dead-lettered by the worker, as `invalid`.
 */
export function encodeCallback(callback: Callback, maxPayloadBytes: number): EncodedCallback {
  const { url } = parseCallback(callback);
  const id = callback.id ?? randomUUID();
  let text: string;
  try {
    // The body is serialised on its own, once: a body of only undefined/functions gives undefined
    // here instead of vanishing from the message, and nothing has to parse the text back to see it.
    const body = JSON.stringify(callback.body) as string | undefined;
    if (body === undefined) throw new Error('body serialises to nothing');
    // Never empty: url and id are always there, so the body follows a comma.
    text = `${JSON.stringify({ ...callback, id, body: undefined }).slice(0, -1)},"body":${body}}`;
  } catch (error) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `body: must be JSON-serialisable (${(error as Error).message})`, {
      field: 'body',
      cause: error,
    });
  }
  const content = Buffer.from(text, 'utf8');
  if (content.length > maxPayloadBytes) {
    throw new RelayError(
      'CR_ERR_INVALID_CALLBACK',
      `body: the encoded callback is ${content.length} bytes, over the limit of ${maxPayloadBytes} (MAX_PAYLOAD_BYTES)`,
      {
        field: 'body',
      },
    );
  }
  return { id, content, url };
}
