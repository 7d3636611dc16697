import type { TargetLimit } from '../formats/target-limit.js';

/** The live workers as this one knows them: how many, and its place among them (0 = lowest id). */
export interface Fleet {
  size: number;
  rank: number;
}

export const ALONE: Fleet = { size: 1, rank: 0 };

/** What one worker may use of a fleet-wide limit. */
export interface WorkerShare {
  /** Requests per second (undefined: no rate limit). */
  rate: number | undefined;
  /** Its bucket's capacity, at least 1 so that a request can ever go. */
  burst: number;
  /** Requests at once (undefined: no concurrency limit; 0: none this turn). */
  concurrency: number | undefined;
}

/**
 * When a concurrency limit is below the number of workers, the workers holding a slot take turns:
 * the turn moves on every ROTATE_MS, so every worker drains the callbacks it holds.
 */
export const ROTATE_MS = 5_000;

/** A fleet-wide burst when the limit gives none: a tenth of a second's rate, at least one request. */
export const defaultBurst = (rate: number): number => Math.max(1, Math.ceil(rate / 10));

/**
 * A worker's share of a fleet-wide limit: `rate × factor ÷ size` (factor: the adaptive back-off,
 * 1 = none) in a bucket of `burst ÷ size` (at least 1), divided by the workers holding a concurrency
 * slot this turn instead when they are fewer (the others start nothing this turn); the concurrency split in whole requests,
 * the remainder to the lowest ranks. With fewer requests at once than workers, a worker's share is 1
 * or 0, and the ranks that hold one rotate every ROTATE_MS (`nowMs`), so no worker's callbacks wait
 * for ever. Pure.
 */
export function workerShare(limit: TargetLimit, fleet: Fleet, factor: number, nowMs: number): WorkerShare {
  const size = Math.max(1, fleet.size);
  const concurrency = limit.concurrency === undefined ? undefined : concurrencyShare(limit.concurrency, { size, rank: fleet.rank }, nowMs);
  // With fewer requests at once than workers, only those holding one this turn can use the rate: it is
  // theirs to split, or the fleet would send (concurrency ÷ size) of it.
  const sharing = concurrency === undefined ? size : Math.min(size, Math.max(1, limit.concurrency ?? size));
  const rate = limit.rate === undefined ? undefined : (limit.rate * factor) / sharing;
  const burst = limit.rate === undefined ? 1 : Math.max(1, (limit.burst ?? defaultBurst(limit.rate)) / sharing);
  return { rate, burst, concurrency };
}

/** `total` requests at once split over the fleet in whole requests: the remainder to the lowest ranks (rotating when some get none). */
export function concurrencyShare(total: number, fleet: Fleet, nowMs: number): number {
  const { size } = fleet;
  const rank = Math.min(Math.max(0, fleet.rank), size - 1);
  const base = Math.floor(total / size);
  const extra = total % size;
  if (extra === 0) return base;
  // Each worker gets at least one: the remainder may stay with the lowest ranks for good.
  const turn = base > 0 ? 0 : Math.floor(nowMs / ROTATE_MS) % size;
  return base + ((rank - turn + size) % size < extra ? 1 : 0);
}

/** When the turn moves on next (ms from `nowMs`). */
export const msUntilNextTurn = (nowMs: number): number => ROTATE_MS - (nowMs % ROTATE_MS);
