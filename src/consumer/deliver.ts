import { request, type Dispatcher } from 'undici';
import { FORBIDDEN_TARGET_CODE, isForbiddenTargetError } from '../http/guarded-agent.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import type { Signer } from '../signing/create-signer.js';
import type { Delivery } from './decode.js';

export interface DeliverOptions {
  /** Whole-request limit: connect, headers and body. */
  timeoutMs: number;
  /** Bytes of response body read at most; the rest is not read. */
  responseBodyLimit: number;
  /** Keep the start of the body as text (only needed to compare a success body). */
  keepBody: boolean;
  dispatcher: Dispatcher;
  /** Adds Standard Webhooks signature headers for a target, when signing is configured. */
  sign?: Signer;
  /** Target of a URL, for per-target secrets. */
  targetOf?: (url: string) => string;
}

/**
 * Step 2: one HTTP attempt. Never throws: network errors and timeouts come back as an outcome
 * without a status. The response body is read up to a cap and discarded.
 */
export async function deliver(delivery: Delivery, options: DeliverOptions): Promise<DeliveryOutcome> {
  const { callback, id, attempt, payload } = delivery;
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  try {
    // Signed at each attempt, so a late retry or a DLQ replay carries a fresh timestamp; the signed
    // bytes are the sent bytes.
    const signature = options.sign?.(options.targetOf?.(callback.url) ?? new URL(callback.url).origin, id, Math.floor(Date.now() / 1000), payload);
    const response = await request(callback.url, {
      method: callback.method ?? 'POST',
      headers: {
        ...callback.headers,
        'content-type': 'application/json',
        'user-agent': 'callback-relay',
        'webhook-id': id,
        'x-callback-attempt': String(attempt),
        ...signature,
      },
      body: payload,
      signal: AbortSignal.timeout(options.timeoutMs),
      dispatcher: options.dispatcher,
    });
    const body = await readCapped(response.body, options.responseBodyLimit, options.keepBody);
    const retryAfter = response.headers['retry-after'];
    return {
      status: response.statusCode,
      durationMs: elapsed(),
      ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
      ...(body === undefined ? {} : { body }),
    };
  } catch (error) {
    // Refused by the address policy before any connection: final, never retried.
    if (isForbiddenTargetError(error)) return { error: `${FORBIDDEN_TARGET_CODE}: ${(error as Error).message}`, forbidden: true, durationMs: elapsed() };
    return { error: describeError(error, options.timeoutMs), durationMs: elapsed() };
  }
}

async function readCapped(body: Dispatcher.ResponseData['body'], limit: number, keep: boolean): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buffer = chunk as Buffer;
    if (keep) chunks.push(buffer.subarray(0, Math.max(0, limit - size)));
    size += buffer.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return keep ? Buffer.concat(chunks).toString('utf8') : undefined;
}

function describeError(error: unknown, timeoutMs: number): string {
  const err = error as Error & { code?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT') {
    return `TIMEOUT: no complete answer within ${timeoutMs}ms`;
  }
  const code = err.code ?? err.cause?.code ?? err.name;
  const message = err.cause?.message ?? err.message;
  return `${code}: ${message}`.slice(0, 500);
}
