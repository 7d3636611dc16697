import { randomUUID } from 'node:crypto';
import { RelayError } from '../errors.js';
import { validateCallback, type Callback } from '../message/callback.js';

export interface EncodedCallback {
  id: string;
  content: Buffer;
}

/**
 * Validates and serialises a callback exactly as the wire contract says, or throws
 * `CR_ERR_INVALID_CALLBACK` naming the field. Nothing is published for a callback that fails here.
 * A `policy` is checked for its shape only: the producer cannot see the workers' RETRY_POLICIES_FILE,
 * so a name they lack is dead-lettered by the worker, as `invalid`.
 */
export function encodeCallback(callback: Callback, maxPayloadBytes: number): EncodedCallback {
  validateCallback(callback);
  const id = callback.id ?? randomUUID();
  let text: string;
  try {
    text = JSON.stringify({ ...callback, id });
    // A body of only undefined/functions would vanish from the JSON instead of failing loudly.
    if (JSON.parse(text).body === undefined) throw new Error('body serialises to nothing');
  } catch (error) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `body: must be JSON-serialisable (${(error as Error).message})`, { field: 'body', cause: error });
  }
  const content = Buffer.from(text, 'utf8');
  if (content.length > maxPayloadBytes) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `body: the encoded callback is ${content.length} bytes, over the limit of ${maxPayloadBytes} (MAX_PAYLOAD_BYTES)`, {
      field: 'body',
    });
  }
  return { id, content };
}
