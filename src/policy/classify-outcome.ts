/** What one HTTP attempt produced, as the deliver step saw it. */
export interface DeliveryOutcome {
  /** HTTP status, absent when no response arrived. */
  status?: number;
  /** Error code when no usable response arrived (e.g. `UND_ERR_CONNECT_TIMEOUT`, `ECONNREFUSED`, `TIMEOUT`). */
  error?: string;
  /** The Retry-After response header, verbatim. */
  retryAfter?: string;
  /** The address policy refused the target: no request was made. */
  forbidden?: boolean;
  /** The start of the response body (capped), only read when a success body is required. */
  body?: string;
  durationMs: number;
}

export type Classification = { kind: 'success' } | { kind: 'retryable'; why: string } | { kind: 'terminal'; why: string };

/**
 * Sorts an outcome: 2xx succeeds (if `successBody` is set, only when the trimmed body equals it);
 * network errors, timeouts, 408, 429 and 5xx are worth retrying; every other answer (3xx — redirects
 * are not followed — and the remaining 4xx) is final.
 */
export function classifyOutcome(outcome: DeliveryOutcome, successBody = ''): Classification {
  const { status } = outcome;
  if (outcome.forbidden) return { kind: 'terminal', why: outcome.error ?? 'forbidden target' };
  if (status === undefined) return { kind: 'retryable', why: outcome.error ?? 'no response' };
  if (status >= 200 && status < 300) {
    if (successBody === '' || (outcome.body ?? '').trim() === successBody) return { kind: 'success' };
    return { kind: 'retryable', why: `HTTP ${status} without the expected success body` };
  }
  if (status === 408 || status === 429 || status >= 500) return { kind: 'retryable', why: `HTTP ${status}` };
  return { kind: 'terminal', why: `HTTP ${status}` };
}
