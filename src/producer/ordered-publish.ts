import { RelayError } from '../errors.js';
import type { Callback } from '../message/callback.js';
import { orderBucket } from '../topology/topology-names.js';
import type { PublishOptions } from './first-attempt-delay.js';

/** Where a publish goes: the lane of its target's bucket, or, with an orderKey, the shard of the key's. */
export type PublishBucket = { lane: number } | { ordered: number };

/**
 * The ordered bucket of a callback with an orderKey (already validated), or undefined without one;
 * `delayMs` is what firstAttemptDelay made of `options`.
 * An ordered callback is published at once, never with a first-attempt delay: callbacks of a key are
 * delivered in the order the broker accepted them, and one waiting out a delay outside its shard would
 * let those published after it overtake it. Throws `CR_ERR_INVALID_CALLBACK` naming the delay's option
 * (`delay` or `deliverAt`). A `deliverAt` already past is no delay and is accepted.
 */
export function orderedPublish(callback: Callback, options: PublishOptions, delayMs: number): { ordered: number } | undefined {
  if (callback.orderKey === undefined) return undefined;
  if (delayMs > 0) {
    const field = options.deliverAt !== undefined ? 'deliverAt' : 'delay';
    throw new RelayError(
      'CR_ERR_INVALID_CALLBACK',
      `${field}: an ordered callback (orderKey) cannot be delayed: it would be overtaken by the callbacks of its key published after it; publish it when it is due`,
      { field },
    );
  }
  return { ordered: orderBucket(callback.orderKey) };
}
