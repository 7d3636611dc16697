/**
 * An operator's limit for one target: a request rate with its burst, a number of requests at once,
 * or both, for the whole fleet. Checked here once for every way a limit arrives (the CLI, the
 * TARGET_LIMITS_FILE, a marker read from P.control), so each says the same about the same value.
 */
export interface TargetLimit {
  /** Requests per second over the fleet. */
  rate?: number;
  /** Requests the fleet may send at once after an idle while (default: a tenth of a second's rate, at least 1). */
  burst?: number;
  /** Requests in flight at once over the fleet. */
  concurrency?: number;
}

/** The fields of a limit, in the order they are shown. */
export const LIMIT_FIELDS = ['rate', 'burst', 'concurrency'] as const;

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3_600 };

/** The highest rate accepted (per second): far above what one target should be sent. */
export const MAX_RATE_PER_SECOND = 100_000;

/**
 * `20/s`, `600/m`, `1000/h` or a bare number (per second) as requests per second; a problem text
 * when it is not one (the caller names the key and the value).
 */
export function parseRate(text: string): number | string {
  const match = /^(\d+(?:\.\d+)?)(?:\/(s|m|h))?$/.exec(text.trim());
  if (!match) return 'must be a rate such as 20/s, 600/m or 1000/h';
  const perSecond = Number(match[1]) / UNITS[match[2] ?? 's']!;
  if (!(perSecond > 0) || perSecond > MAX_RATE_PER_SECOND) return `must be above 0 and at most ${MAX_RATE_PER_SECOND}/s`;
  return perSecond;
}

/** A rate as it was likely written: `20/s`, or per minute when below one per second. */
export function formatRate(perSecond: number): string {
  if (perSecond >= 1) return `${round(perSecond)}/s`;
  if (perSecond * 60 >= 1) return `${round(perSecond * 60)}/m`;
  return `${round(perSecond * 3_600)}/h`;
}

const round = (value: number): number => Math.round(value * 1_000) / 1_000;

/**
 * Checks a limit's fields, from JSON or flags: `rate` a positive number (per second) or a rate text,
 * `burst` and `concurrency` positive integers; at least one of `rate` and `concurrency`, `burst` only
 * with `rate`. Returns the limit, or `{ problem, field }` naming the first bad field.
 */
export function checkLimit(raw: Record<string, unknown>): TargetLimit | { problem: string; field: string } {
  for (const key of Object.keys(raw)) {
    if (!(LIMIT_FIELDS as readonly string[]).includes(key))
      return { field: key, problem: `is not a limit field (${LIMIT_FIELDS.join(', ')})` };
  }
  const limit: TargetLimit = {};
  if (raw.rate !== undefined) {
    const rate =
      typeof raw.rate === 'string' ? parseRate(raw.rate) : typeof raw.rate === 'number' ? raw.rate : 'must be a rate such as 20/s';
    if (typeof rate === 'string') return { field: 'rate', problem: rate };
    if (!(rate > 0) || rate > MAX_RATE_PER_SECOND)
      return { field: 'rate', problem: `must be above 0 and at most ${MAX_RATE_PER_SECOND}/s` };
    limit.rate = rate;
  }
  for (const field of ['burst', 'concurrency'] as const) {
    const value = raw[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 1_000_000)
      return { field, problem: 'must be a whole number from 1 to 1000000' };
    limit[field] = value;
  }
  if (limit.rate === undefined && limit.concurrency === undefined) return { field: 'rate', problem: 'give a rate, a concurrency or both' };
  if (limit.burst !== undefined && limit.rate === undefined) return { field: 'burst', problem: 'a burst needs a rate' };
  return limit;
}

/** `20/s burst 5 concurrency 3`: a limit as `target list` shows it. */
export function describeLimit(limit: TargetLimit): string {
  const parts: string[] = [];
  if (limit.rate !== undefined) parts.push(`rate ${formatRate(limit.rate)}`);
  if (limit.burst !== undefined) parts.push(`burst ${limit.burst}`);
  if (limit.concurrency !== undefined) parts.push(`concurrency ${limit.concurrency}`);
  return parts.join(' ');
}
