import { formatDuration } from '../config/duration.js';
import { RelayError } from '../errors.js';
import { MAX_LEVEL_DELAY_MS } from '../topology/delay-levels.js';

export interface PublishOptions {
  /** Delay before the first attempt, in ms. Default 0. At most 2^22 − 1 s (48.5 days). */
  delay?: number;
  /** Alternative to `delay`: the first attempt's time. A past time means now. */
  deliverAt?: Date;
  /**
   * The W3C trace context to carry to the receiver (`traceparent`, optionally `tracestate`). Without
   * it, and with tracing on (OTEL_EXPORTER_OTLP_ENDPOINT), the caller's active OpenTelemetry span.
   */
  traceparent?: string;
  tracestate?: string;
}

/** The first-attempt delay in ms from `delay` or `deliverAt`, or a `CR_ERR_INVALID_CALLBACK` naming the option. */
export function firstAttemptDelay(options: PublishOptions, nowMs: number): number {
  if (options.delay !== undefined && options.deliverAt !== undefined) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', 'delay: give either delay or deliverAt, not both', { field: 'delay' });
  }
  let delayMs = 0;
  let field = 'delay';
  if (options.deliverAt !== undefined) {
    field = 'deliverAt';
    if (!(options.deliverAt instanceof Date) || Number.isNaN(options.deliverAt.getTime())) {
      throw new RelayError('CR_ERR_INVALID_CALLBACK', 'deliverAt: must be a valid Date', { field });
    }
    delayMs = Math.max(0, options.deliverAt.getTime() - nowMs);
  } else if (options.delay !== undefined) {
    if (!Number.isFinite(options.delay) || options.delay < 0) {
      throw new RelayError('CR_ERR_INVALID_CALLBACK', `delay: must be a non-negative number of ms, got ${options.delay}`, { field });
    }
    delayMs = options.delay;
  }
  if (delayMs > MAX_LEVEL_DELAY_MS) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: at most ${formatDuration(MAX_LEVEL_DELAY_MS)} ahead`, { field });
  }
  return delayMs;
}
