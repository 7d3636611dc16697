/** Lower clamp of a Retry-After: a receiver answering `0` must not turn retries into a busy loop. */
export const RETRY_AFTER_MIN_MS = 1_000;

/**
 * Reads a Retry-After value — delta-seconds or an HTTP date (RFC 9110 §10.2.3) — as milliseconds
 * from `nowMs`. Returns `undefined` when absent or unreadable, so the schedule applies instead.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  if (!/[a-z]/i.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Keeps a receiver-requested delay within [RETRY_AFTER_MIN_MS, maxMs]. */
export function clampRetryAfter(delayMs: number, maxMs: number): number {
  return Math.min(Math.max(delayMs, RETRY_AFTER_MIN_MS), Math.max(maxMs, RETRY_AFTER_MIN_MS));
}
