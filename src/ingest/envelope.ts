import { parseDuration } from '../config/duration.js';
import { RelayError } from '../errors.js';
import type { Callback, CallbackMethod } from '../message/callback.js';
import { isValidId } from '../message/callback.js';
import { encodeCallback } from '../producer/encode-callback.js';
import { firstAttemptDelay, type PublishOptions } from '../producer/first-attempt-delay.js';
import { orderedPublish } from '../producer/ordered-publish.js';

/** What `POST /v1/callbacks` takes: a callback of the wire contract plus when to attempt it first. */
export interface Envelope {
  id?: string;
  url: string;
  body: unknown;
  headers?: Record<string, string>;
  method?: CallbackMethod;
  /** ms, or a duration such as `30s`. */
  delay?: number | string;
  /** RFC 3339 date-time. */
  deliverAt?: string;
  /** Callbacks with the same key are delivered in the order they were accepted; not with a delay. */
  orderKey?: string;
}

export interface PublishJob {
  callback: Callback;
  options: PublishOptions;
}

const invalid = (field: string, problem: string): RelayError =>
  new RelayError('CR_ERR_INVALID_CALLBACK', `${field}: ${problem}`, { field });

/** Checks an `Idempotency-Key` header: absent, or usable as a callback id. */
export function idempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isValidId(value))
    throw invalid('Idempotency-Key', 'must be one header of 1-255 printable ASCII characters without surrounding spaces');
  return value;
}

/**
 * Splits an envelope into what `publish()` takes: the callback (its id is the envelope's, else
 * `fallbackId`: from the Idempotency-Key, or new) and the first-attempt options. Checks only the
 * delay's spelling; `publish()` checks the rest, or `checkPublishJob` when nothing may be published
 * before everything was checked. Throws `CR_ERR_INVALID_CALLBACK` naming the field.
 */
export function toPublishJob(envelope: Envelope, fallbackId: string): PublishJob {
  const { delay, deliverAt, ...rest } = envelope;
  const callback: Callback = { ...rest, id: rest.id ?? fallbackId };
  const options: PublishOptions = {};
  if (typeof delay === 'string') {
    options.delay = parseDuration(delay);
    if (options.delay === undefined)
      throw invalid('delay', `must be ms or a duration such as 30s or 5m, got ${JSON.stringify(delay.slice(0, 40))}`);
  } else if (delay !== undefined) {
    options.delay = delay;
  }
  if (deliverAt !== undefined) options.deliverAt = new Date(deliverAt);
  return { callback, options };
}

/**
 * Checks a job exactly as `publish()` will (wire contract, MAX_PAYLOAD_BYTES, delay range), so that
 * a batch can be refused whole before any of it is published. Throws `CR_ERR_INVALID_CALLBACK`.
 */
export function checkPublishJob(job: PublishJob, nowMs: number, maxPayloadBytes: number): PublishJob {
  const delayMs = firstAttemptDelay(job.options, nowMs);
  encodeCallback(job.callback, maxPayloadBytes);
  orderedPublish(job.callback, job.options, delayMs);
  return job;
}
