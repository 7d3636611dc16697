/**
 * The bytes of request bodies one ingest replica holds at once (INGEST_INFLIGHT_BYTES). A request
 * takes its share before its body is read and gives it back once answered (or cut), so that bodies
 * being read, parsed and published never add up past the bound, however many clients send at once.
 * A body's parsed form and its encoded copies cost a small multiple of its bytes: the bound is on the
 * bytes, the memory follows.
 */
export interface RequestBudget {
  /** Takes `bytes`, or answers false (taking nothing) when they would exceed the bound. */
  take(bytes: number): boolean;
  give(bytes: number): void;
  /** Bytes taken now. */
  inUse(): number;
}

export function createRequestBudget(limit: number): RequestBudget {
  let used = 0;
  return {
    take(bytes) {
      if (used + bytes > limit) return false;
      used += bytes;
      return true;
    },
    give(bytes) {
      used = Math.max(0, used - bytes);
    },
    inUse: () => used,
  };
}

/**
 * What a request is charged before its body is read: its Content-Length, or the route's body limit
 * when it has none (chunked), or when it is over the limit (fastify answers 413 without reading it).
 */
export function requestCharge(contentLength: string | undefined, bodyLimit: number): number {
  if (contentLength === undefined || !/^\d+$/.test(contentLength)) return bodyLimit;
  return Math.min(Number(contentLength), bodyLimit);
}
