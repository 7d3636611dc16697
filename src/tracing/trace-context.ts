import { RelayError } from '../errors.js';

/**
 * A W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
 * values, as they travel in the AMQP headers of a callback message and in the HTTP request to its
 * receiver. Plain strings: carrying one costs no tracing library.
 */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** The AMQP and HTTP header names: the same on both hops, lower case as HTTP/2 requires. */
export const TRACE_HEADER = { parent: 'traceparent', state: 'tracestate' } as const;

/** A parsed `traceparent`: ids as lower-case hex, flags as a number (bit 0: sampled). */
export interface ParsedTraceparent {
  traceId: string;
  spanId: string;
  flags: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
/** The spec leaves tracestate parsing to vendors; we only keep it a valid, bounded header value. */
const TRACESTATE = /^[\x20-\x7e]*$/;
/** Vendors may truncate a longer tracestate: https://www.w3.org/TR/trace-context/#tracestate-limits */
const MAX_TRACESTATE_LENGTH = 512;

/**
 * Parses a `traceparent`, or undefined when it is not a valid one: version ff, all-zero ids, or a
 * version-00 value with extra fields. A later version may append fields, which are ignored.
 */
export function parseTraceparent(value: string): ParsedTraceparent | undefined {
  const match = TRACEPARENT.exec(value);
  if (!match) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** The version-00 `traceparent` of a span. */
export const formatTraceparent = ({ traceId, spanId, flags }: ParsedTraceparent): string =>
  `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;

const isTracestate = (value: string): boolean => value.length <= MAX_TRACESTATE_LENGTH && TRACESTATE.test(value);

/**
 * The trace context a producer passed to `publish()`, checked: `CR_ERR_INVALID_CALLBACK` naming the
 * option when a value is malformed, so a bad context is refused before anything is published.
 */
export function traceOption(options: { traceparent?: string | undefined; tracestate?: string | undefined }): TraceContext | undefined {
  const { traceparent, tracestate } = options;
  if (traceparent === undefined) {
    if (tracestate !== undefined)
      throw new RelayError('CR_ERR_INVALID_CALLBACK', 'tracestate: given without traceparent', { field: 'tracestate' });
    return undefined;
  }
  if (typeof traceparent !== 'string' || !parseTraceparent(traceparent)) {
    throw new RelayError(
      'CR_ERR_INVALID_CALLBACK',
      `traceparent: not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), got ${JSON.stringify(String(traceparent).slice(0, 100))}`,
      { field: 'traceparent' },
    );
  }
  if (tracestate === undefined) return { traceparent };
  if (typeof tracestate !== 'string' || !isTracestate(tracestate)) {
    throw new RelayError('CR_ERR_INVALID_CALLBACK', `tracestate: must be at most ${MAX_TRACESTATE_LENGTH} printable ASCII characters`, {
      field: 'tracestate',
    });
  }
  return { traceparent, tracestate };
}

/**
 * The trace context a message carries in its AMQP headers, or undefined. A malformed one (a foreign
 * producer's) is ignored rather than forwarded: the receiver would discard it anyway.
 */
export function readTraceContext(headers: Record<string, unknown> | undefined): TraceContext | undefined {
  const traceparent = text(headers?.[TRACE_HEADER.parent]);
  if (traceparent === undefined || !parseTraceparent(traceparent)) return undefined;
  const tracestate = text(headers?.[TRACE_HEADER.state]);
  return tracestate !== undefined && tracestate !== '' && isTracestate(tracestate) ? { traceparent, tracestate } : { traceparent };
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('latin1') : undefined;

/** The headers of a trace context, without an absent tracestate. */
export const traceHeaders = (trace: TraceContext): Record<string, string> =>
  trace.tracestate === undefined
    ? { [TRACE_HEADER.parent]: trace.traceparent }
    : { [TRACE_HEADER.parent]: trace.traceparent, [TRACE_HEADER.state]: trace.tracestate };

/**
 * A callback's own request headers minus any `traceparent`/`tracestate` (in any letter case): when
 * the relay sends a trace context, it is the only one, so the receiver never sees two.
 */
export function withoutTraceHeaders(headers: Record<string, string> | undefined): Record<string, string> | undefined {
  if (headers === undefined) return undefined;
  let kept: Record<string, string> | undefined;
  for (const name of Object.keys(headers)) {
    const lower = name.toLowerCase();
    if (lower !== TRACE_HEADER.parent && lower !== TRACE_HEADER.state) continue;
    kept ??= { ...headers };
    delete kept[name];
  }
  return kept ?? headers;
}
