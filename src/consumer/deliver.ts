import type { EventEmitter } from 'node:events';
import type { Dispatcher } from 'undici';
import { FORBIDDEN_TARGET_CODE, isForbiddenTargetError } from '../http/guarded-agent.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import type { Signer } from '../signing/create-signer.js';
import { TRACE_HEADER, withoutTraceHeaders, type TraceContext } from '../tracing/trace-context.js';
import type { Delivery } from './decode.js';

export interface DeliverOptions {
  /** Whole-request limit: connect, headers and body (a callback's policy may set its own). */
  timeoutMs: number;
  /** Bytes of response body read at most; the rest is not read. */
  responseBodyLimit: number;
  /** Keep the start of the body as text (only needed to compare a success body; a policy decides for its callbacks). */
  keepBody: boolean;
  dispatcher: Dispatcher;
  /** Adds Standard Webhooks signature headers for a target (its origin), when signing is configured. */
  sign?: Signer;
}

/**
 * Step 2: one HTTP attempt, aborted through `signal` at its deadline (headers or body). Never throws:
 * network errors and timeouts come back as an outcome without a status. The response body is read
 * up to a cap and discarded unless `keepBody`.
 *
 * `trace` (the attempt span's context when tracing, else the published one) is sent as `traceparent`
 * and `tracestate`, replacing any the callback's own headers name, so the receiver joins the trace.
 */
export async function deliver(
  delivery: Delivery,
  options: DeliverOptions,
  signal: DeadlineSignal,
  trace: TraceContext | undefined = delivery.trace,
): Promise<DeliveryOutcome> {
  const { callback, url, id, attempt, payload, policy } = delivery;
  const timeoutMs = policy ? policy.timeoutMs : options.timeoutMs;
  const keepBody = policy ? policy.retry.successBody !== '' : options.keepBody;
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  try {
    const origin = url.origin;
    // Signed at each attempt, so a late retry or a DLQ replay carries a fresh timestamp; the signed
    // bytes are the sent bytes.
    const signature = options.sign?.(origin, id, Math.floor(Date.now() / 1000), payload);
    // Later entries win; the relay's own are assigned one by one, without intermediate objects.
    const headers: Record<string, string> = { ...(trace ? withoutTraceHeaders(callback.headers) : callback.headers) };
    if (trace) {
      headers[TRACE_HEADER.parent] = trace.traceparent;
      if (trace.tracestate !== undefined) headers[TRACE_HEADER.state] = trace.tracestate;
    }
    headers['content-type'] = 'application/json';
    headers['user-agent'] = 'callback-relay';
    headers['webhook-id'] = id;
    headers['x-callback-attempt'] = String(attempt);
    if (signature) Object.assign(headers, signature);
    // The dispatcher's own entry point: the URL was parsed once, in decode.
    const response = await options.dispatcher.request({
      origin,
      path: url.search ? url.pathname + url.search : url.pathname,
      method: callback.method ?? 'POST',
      headers,
      body: payload,
      // The attempt's one timer: it aborts the request, headers or body, at its deadline.
      signal,
    });
    const body = keepBody
      ? await readCapped(response.body, options.responseBodyLimit)
      : await discard(response.body, options.responseBodyLimit, signal);
    const retryAfter = response.headers['retry-after'];
    const outcome: DeliveryOutcome = { status: response.statusCode, durationMs: elapsed() };
    if (typeof retryAfter === 'string') outcome.retryAfter = retryAfter;
    if (body !== undefined) outcome.body = body;
    return outcome;
  } catch (error) {
    // Refused by the address policy before any connection: final, never retried.
    if (isForbiddenTargetError(error))
      return { error: `${FORBIDDEN_TARGET_CODE}: ${(error as Error).message}`, forbidden: true, durationMs: elapsed() };
    return { error: describeError(error, timeoutMs), durationMs: elapsed() };
  }
}

/** What undici accepts as a signal (an AbortSignal, or an EventEmitter emitting `abort`), with its state. */
export type DeadlineSignal = (AbortSignal | EventEmitter) & { readonly aborted: boolean; readonly reason?: unknown };

type Body = Dispatcher.ResponseData['body'];

/** Reads and keeps the start of the body, up to `limit` bytes; the rest is not read. */
async function readCapped(body: Body, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    chunks.push(buffer.subarray(0, Math.max(0, limit - size)));
    size += buffer.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads the body to its end without keeping it (so the connection can be reused), or closes the
 * connection past `limit` bytes. A body cut short by the network is an error, as if it had been read.
 */
async function discard(body: Body, limit: number, signal: DeadlineSignal): Promise<undefined> {
  await body.dump({ limit });
  // dump() settles on close whatever closed the stream: the deadline (undici destroys the body with
  // the signal's reason), the network, or the limit (an AbortError of dump's own).
  if (signal.aborted) throw signal.reason ?? new DOMException('the attempt was aborted', 'TimeoutError');
  if (body.errored && body.errored.name !== 'AbortError') throw body.errored;
  return undefined;
}

function describeError(error: unknown, timeoutMs: number): string {
  const err = error as Error & { code?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') {
    return `TIMEOUT: no complete answer within ${timeoutMs}ms`;
  }
  const code = err.code ?? err.cause?.code ?? err.name;
  const message = err.cause?.message ?? err.message;
  return `${code}: ${message}`.slice(0, 500);
}
