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
  const at = parseHttpDate(text);
  return at === undefined ? undefined : Math.max(0, at - nowMs);
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
// The three forms RFC 9110 §5.6.7 lets a recipient accept; anything looser (Date.parse takes
// "next 10") must fall back to the schedule, not become an immediate retry.
const IMF_FIXDATE = new RegExp(`^${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT$`);
const RFC850 = new RegExp(`^${DAY}[a-z]*, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT$`);
const ASCTIME = new RegExp(`^${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4}$`);

function parseHttpDate(text: string): number | undefined {
  let at = Number.NaN;
  if (IMF_FIXDATE.test(text) || RFC850.test(text)) at = Date.parse(text);
  else if (ASCTIME.test(text)) at = Date.parse(`${text} GMT`);
  return Number.isNaN(at) ? undefined : at;
}

/** Keeps a receiver-requested delay within [RETRY_AFTER_MIN_MS, maxMs]. */
export function clampRetryAfter(delayMs: number, maxMs: number): number {
  return Math.min(Math.max(delayMs, RETRY_AFTER_MIN_MS), Math.max(maxMs, RETRY_AFTER_MIN_MS));
}
