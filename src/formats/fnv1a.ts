/**
 * FNV-1a, 32 bits, over a string's UTF-8 bytes: the hash of the wire contract's buckets (a target
 * origin's lane, an order key's shard). Producers in any language compute it the same way:
 * http://www.isthe.com/chongo/tech/comp/fnv/#FNV-1a
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
