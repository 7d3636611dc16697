import { createHash } from 'node:crypto';

/** What a replica remembers of an Idempotency-Key: the digest of the callback it first came with. */
export type KeyClaim = 'new' | 'same' | 'conflict';

export interface KeyRecord {
  /**
   * Records that the callback with id `id` came with content `digest`: `new` the first time within the
   * window, `same` when it came with the same content before, `conflict` when it came with other content
   * (which must then be refused, not published: receivers would drop it as a duplicate of the first).
   */
  claim(id: string, digest: string): KeyClaim;
  /** Forgets `id`: its callback was refused as invalid, so the key stands for nothing yet. */
  forget(id: string): void;
  /** Keys remembered now. */
  size(): number;
}

export interface KeyRecordOptions {
  /** INGEST_IDEMPOTENCY_WINDOW, ms: a key is remembered this long after it was first seen. */
  windowMs: number;
  /** INGEST_IDEMPOTENCY_KEYS: at most this many keys; the oldest is forgotten first. */
  maxKeys: number;
  now: () => number;
}

// The id's own text can be 255 characters: a 16-byte hash keeps a remembered key near 100 bytes.
const shortId = (id: string): string => createHash('sha256').update(id, 'utf8').digest('base64url').slice(0, 22);

/**
 * A bounded record of the keys one replica has seen, in memory (no database: the relay keeps no
 * state of its own beyond the broker). Map order is insertion order, so the oldest entry is first:
 * expiry and eviction both drop from the front, each in amortised constant time.
 */
export function createKeyRecord({ windowMs, maxKeys, now }: KeyRecordOptions): KeyRecord {
  const seen = new Map<string, { digest: string; at: number }>();
  const forgetOld = (nowMs: number): void => {
    for (const [key, entry] of seen) {
      if (nowMs - entry.at < windowMs && seen.size <= maxKeys) return;
      seen.delete(key);
    }
  };
  return {
    claim(id, digest) {
      const nowMs = now();
      forgetOld(nowMs);
      const key = shortId(id);
      const entry = seen.get(key);
      if (entry !== undefined) return entry.digest === digest ? 'same' : 'conflict';
      seen.set(key, { digest, at: nowMs });
      forgetOld(nowMs);
      return 'new';
    },
    forget: (id) => void seen.delete(shortId(id)),
    size: () => seen.size,
  };
}
