import { createHash } from 'node:crypto';
import { RelayError } from '../errors.js';
import { MAX_ID_LENGTH } from '../message/callback.js';
import type { Envelope } from './envelope.js';

const invalid = (field: string, problem: string): RelayError =>
  new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: ${problem}`, { field });

/**
 * Where a callback's id came from, so that an answer can say exactly how to send the callback again
 * with the same id: `body` its own `id`; `key` the Idempotency-Key (a single POST),
 * `<token name>:<key>`; `content` a batch item without an id, `<token name>:<key>:<digest of the item>`;
 * `new` a random UUID (no key, no id). The token's name scopes a key: two clients (tokens of two
 * names) using the same key get two ids, so neither a receiver nor a cancel mixes their callbacks up.
 */
export type IdSource = 'body' | 'key' | 'content' | 'new';

export interface AssignedId {
  id: string;
  from: IdSource;
}

/** Characters of the item digest: 22 base64url characters are 132 bits of SHA-256. */
export const ITEM_DIGEST_LENGTH = 22;
/** The longest Idempotency-Key a client named `scope` can send: `<scope>:<key>` (a batch: `…:<digest>`) is an id. */
export const maxKeyLength = (scope: string, batch: boolean): number =>
  MAX_ID_LENGTH - scope.length - 1 - (batch ? 1 + ITEM_DIGEST_LENGTH : 0);

const checkKeyLength = (key: string, scope: string, batch: boolean): void => {
  const most = maxKeyLength(scope, batch);
  if (key.length <= most) return;
  const shape = batch ? `<token name>:<key>:<${ITEM_DIGEST_LENGTH} characters>` : '<token name>:<key>';
  throw invalid(
    'Idempotency-Key',
    `must be at most ${most} characters${batch ? ' for a batch with items without an id' : ''} with the token named ${JSON.stringify(scope)}: the id is ${shape}, at most ${MAX_ID_LENGTH}`,
  );
};

/** A single POST's id: its own, else `<scope>:<Idempotency-Key>` (`scope` is the token's name), else new. */
export function singleId(envelope: Envelope, key: string | undefined, scope: string, newId: () => string): AssignedId {
  if (envelope.id !== undefined) return { id: envelope.id, from: 'body' };
  if (key === undefined) return { id: newId(), from: 'new' };
  checkKeyLength(key, scope, false);
  return { id: `${scope}:${key}`, from: 'key' };
}

/**
 * The digest of what a receiver gets from an item (method, url, headers, body), so that the same item
 * gets the same id wherever it stands in whichever batch. Object keys are sorted and header names
 * lower-cased, so a client that serialises the same item differently still gets the same digest; the
 * delay is left out, so that an item sent again later (with a recomputed `deliverAt`) keeps its id.
 * An `orderKey` counts (only when present, so the digests of items without one are as they were).
 */
export function itemDigest(envelope: Envelope): string {
  const headers = Object.entries(envelope.headers ?? {})
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
  const item = [envelope.method ?? 'POST', envelope.url, headers, envelope.body ?? null];
  if (envelope.orderKey !== undefined) item.push(envelope.orderKey);
  const canonical = JSON.stringify(item, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((k) => [k, (value as Record<string, unknown>)[k]]),
        )
      : value,
  );
  return createHash('sha256').update(canonical, 'utf8').digest('base64url').slice(0, ITEM_DIGEST_LENGTH);
}

/**
 * A batch's ids, never from an item's position: resending some items of a batch must give each the id
 * it had, and no other item that id. An item's own `id` wins; with an Idempotency-Key an item without
 * one gets `<scope>:<key>:<itemDigest>`; without a key, a new UUID. Two items that would get the same derived
 * id (identical items) refuse the batch: receivers would drop one as a duplicate of the other.
 */
export function batchIds(envelopes: readonly Envelope[], key: string | undefined, scope: string, newId: () => string): AssignedId[] {
  const derives = key !== undefined && envelopes.some((envelope) => envelope.id === undefined);
  if (derives) checkKeyLength(key, scope, true);
  const ids = envelopes.map((envelope): AssignedId => {
    if (envelope.id !== undefined) return { id: envelope.id, from: 'body' };
    return key === undefined ? { id: newId(), from: 'new' } : { id: `${scope}:${key}:${itemDigest(envelope)}`, from: 'content' };
  });
  const firstIndex = new Map<string, number>();
  ids.forEach(({ id, from }, index) => {
    const earlier = firstIndex.get(id);
    if (earlier === undefined) return void firstIndex.set(id, index);
    // Explicit ids may repeat (one event fanned out to several URLs); a derived one may not.
    if (from === 'content' || ids[earlier]!.from === 'content') {
      throw invalid(
        `callbacks[${index}]`,
        `would get the id ${JSON.stringify(id)}, as callbacks[${earlier}] does: identical items need an id of their own, else receivers drop one as a duplicate`,
      );
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
      return `send it again unchanged (delay aside) with the same Idempotency-Key and a token of the same name, so that it keeps the id ${quoted}`;
    case 'content':
      return `send the item again unchanged (delay aside) with the same Idempotency-Key and a token of the same name, or with "id": ${quoted}, so that it keeps the id ${quoted}`;
    case 'new':
      return `send it again with "id": ${quoted} in the callback, so that it keeps this id`;
  }
}
