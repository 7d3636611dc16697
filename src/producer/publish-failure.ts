import { formatDuration } from '../config/duration.js';
import { RelayError } from '../errors.js';

/** What the publisher knows when one publish attempt did not end in a confirm. */
export interface FailedAttempt {
  /** PUBLISH_TIMEOUT ran out (this attempt's own wait or the wait for the topology). */
  timedOut: boolean;
  /** The channel or connection went down while this attempt waited for its confirm. */
  lostDuringAttempt: boolean;
  /** The channel or connection went down at any time since publish() was called. */
  lostSincePublish: boolean;
  /** PUBLISH_TIMEOUT, for the message. */
  publishTimeoutMs: number;
  /** What the attempt ended with: the cause of the error it is rejected with. */
  cause?: unknown;
}

/** Publish the same message again (same id), or give up with this error. */
export type FailureDecision = { action: 'republish' } | { action: 'reject'; error: RelayError };

/**
 * Decides what a failed attempt means. The broker's answer is lost with the channel: a message it
 * had stored may never be confirmed (https://www.rabbitmq.com/docs/confirms#publisher-confirms),
 * so the publisher republishes it with the same id, and receivers deduplicate on webhook-id. Once
 * PUBLISH_TIMEOUT runs out after such a loss the outcome stays unknown, and the code says so. With
 * the channel still up and no timeout, the attempt ended in a negative confirm.
 */
export function decidePublishFailure(attempt: FailedAttempt): FailureDecision {
  if (attempt.timedOut) {
    const error = attempt.lostSincePublish
      ? outcomeUnknownError(attempt.publishTimeoutMs, attempt.cause)
      : publishTimeoutError(attempt.publishTimeoutMs, attempt.cause);
    return { action: 'reject', error };
  }
  if (attempt.lostDuringAttempt) return { action: 'republish' };
  return {
    action: 'reject',
    error: new RelayError(
      'CR_ERR_PUBLISH_NACKED',
      'the broker refused the callback (negative confirm): it was not queued; publish again later with the same id',
      { cause: attempt.cause },
    ),
  };
}

export const publishTimeoutError = (ms: number, cause?: unknown): RelayError =>
  new RelayError(
    'CR_ERR_PUBLISH_TIMEOUT',
    `the broker did not confirm within ${formatDuration(ms)} (PUBLISH_TIMEOUT); it may be unreachable. The callback may or may not be queued: publish again with the same id`,
    { cause },
  );

export const outcomeUnknownError = (ms: number, cause?: unknown): RelayError =>
  new RelayError(
    'CR_ERR_OUTCOME_UNKNOWN',
    `outcome unknown: the connection to the broker dropped before it confirmed, and republishing got no confirm within ${formatDuration(ms)} (PUBLISH_TIMEOUT). The callback may or may not be queued: republish with the same id`,
    { cause },
  );
