import { createHash } from 'node:crypto';
import { RelayError } from '../errors.js';
import { MAX_ID_LENGTH } from '../message/callback.js';
import type { Envelope } from './envelope.js';

/**
 * Where a callback's id came from, so that an answer can say exactly how to send the callback again
 * with the same id: `body` its own `id`; `key` the Idempotency-Key (a single POST); `content` a batch
 * item without an id, `<Idempotency-Key>:<digest of the item>`; `new` a random UUID (no key, no id).
 */
export type IdSource = 'body' | 'key' | 'content' | 'new';

export interface AssignedId {
  id: string;
  from: IdSource;
}

/** Characters of the item digest: 22 base64url characters are 132 bits of SHA-256. */
export const ITEM_DIGEST_LENGTH = 22;
/** The longest Idempotency-Key a batch with an item without an id can take: `<key>:<digest>` is an id. */
export const MAX_BATCH_KEY_LENGTH = MAX_ID_LENGTH - 1 - ITEM_DIGEST_LENGTH;

/** A single POST's id: its own, else the Idempotency-Key, else new. */
export function singleId(envelope: Envelope, key: string | undefined, newId: () => string): AssignedId {
  if (envelope.id !== undefined) return { id: envelope.id, from: 'body' };
  return key === undefined ? { id: newId(), from: 'new' } : { id: key, from: 'key' };
}

/**
 * The digest of what a receiver gets from an item (method, url, headers, body), so that the same item
 * gets the same id wherever it stands in whichever batch. Object keys are sorted and header names
 * lower-cased, so a client that serialises the same item differently still gets the same digest; the
 * delay is left out, so that an item sent again later (with a recomputed `deliverAt`) keeps its id.
 */
export function itemDigest(envelope: Envelope): string {
  const headers = Object.entries(envelope.headers ?? {})
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
  const canonical = JSON.stringify([envelope.method ?? 'POST', envelope.url, headers, envelope.body ?? null], (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.keys(value).sort().map((k) => [k, (value as Record<string, unknown>)[k]])) : value,
  );
  return createHash('sha256').update(canonical, 'utf8').digest('base64url').slice(0, ITEM_DIGEST_LENGTH);
}

const invalid = (field: string, problem: string): RelayError => new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: ${problem}`, { field });

/**
 * A batch's ids, never from an item's position: resending some items of a batch must give each the id
 * it had, and no other item that id. An item's own `id` wins; with an Idempotency-Key an item without
 * one gets `<key>:<itemDigest>`; without a key, a new UUID. Two items that would get the same derived
 * id (identical items) refuse the batch: receivers would drop one as a duplicate of the other.
 */
export function batchIds(envelopes: readonly Envelope[], key: string | undefined, newId: () => string): AssignedId[] {
  const derives = key !== undefined && envelopes.some((envelope) => envelope.id === undefined);
  if (derives && key.length > MAX_BATCH_KEY_LENGTH) {
    throw invalid('Idempotency-Key', `must be at most ${MAX_BATCH_KEY_LENGTH} characters for a batch with items without an id, whose ids are <key>:<${ITEM_DIGEST_LENGTH} characters>`);
  }
  const ids = envelopes.map((envelope): AssignedId => {
    if (envelope.id !== undefined) return { id: envelope.id, from: 'body' };
    return key === undefined ? { id: newId(), from: 'new' } : { id: `${key}:${itemDigest(envelope)}`, from: 'content' };
  });
  const firstIndex = new Map<string, number>();
  ids.forEach(({ id, from }, index) => {
    const earlier = firstIndex.get(id);
    if (earlier === undefined) return void firstIndex.set(id, index);
    // Explicit ids may repeat (one event fanned out to several URLs); a derived one may not.
    if (from === 'content' || ids[earlier]!.from === 'content') {
      throw invalid(`callbacks[${index}]`, `would get the id ${JSON.stringify(id)}, as callbacks[${earlier}] does: identical items need an id of their own, else receivers drop one as a duplicate`);
    }
  });
  return ids;
}

/**
 * How to send a callback again so that it keeps its id, by where the id came from. The relay does not
 * deduplicate; keeping the id is what lets receivers (which deduplicate on `webhook-id`) drop a copy.
 */
export function resendAdvice({ id, from }: AssignedId): string {
  const quoted = JSON.stringify(id);
  switch (from) {
    case 'body':
      return `send it again with the same id ${quoted}`;
    case 'key':
      return `send it again with the same Idempotency-Key, so that it keeps the id ${quoted}`;
    case 'content':
      return `send the item again unchanged (delay aside) with the same Idempotency-Key, or with "id": ${quoted}, so that it keeps the id ${quoted}`;
    case 'new':
      return `send it again with "id": ${quoted} in the callback, so that it keeps this id`;
  }
}
