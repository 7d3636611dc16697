import { formatDuration } from '../config/duration.js';
import { RelayError, isRelayError } from '../errors.js';

/** What a marker publish knows when an attempt did not end in a confirm. */
export interface FailedMarker {
  /** The marker, for the message: `cancel marker of cb-1`, `pause marker of https://partner.example`. */
  what: string;
  /** The control stream it was published to. */
  queue: string;
  /** What the attempt ended with; `undefined` when no open channel came before the deadline. */
  error: unknown;
  /** A channel closed after the marker was sent on it: the broker may have stored it unconfirmed. */
  lostAfterSend: boolean;
  /** Time left before the deadline (PUBLISH_TIMEOUT from the call). */
  timeLeftMs: number;
  /** PUBLISH_TIMEOUT, for the message. */
  timeoutMs: number;
}

/** Publish the marker again on the next channel, or give up with this error. */
export type MarkerDecision = { action: 'republish' } | { action: 'reject'; error: unknown };

/**
 * Decides what a failed marker publish means, with one set of stable codes for every writer of
 * markers (CLI, `publisher.cancel`, a worker's health and pause broadcasts). A marker stored twice
 * has the effect of one, so a marker whose channel closed before its confirm is simply published
 * again on the next channel while time is left; a confirm lost that way leaves the outcome unknown
 * (https://www.rabbitmq.com/docs/confirms#publisher-confirms). A returned marker means the stream
 * does not exist (the publish is mandatory): publishing again cannot help.
 */
export function decideMarkerFailure(failure: FailedMarker): MarkerDecision {
  const { error, what, queue } = failure;
  if (isRelayError(error, 'CR_ERR_PUBLISH_RETURNED')) {
    return reject(
      new RelayError('CR_ERR_PUBLISH_RETURNED', `the control stream "${queue}" does not exist: the ${what} was not stored`, {
        cause: error,
      }),
    );
  }
  if (isRelayError(error, 'CR_ERR_PUBLISH_NACKED')) {
    return reject(
      new RelayError('CR_ERR_PUBLISH_NACKED', `the broker refused the ${what} (negative confirm): it was not stored; send it again later`, {
        cause: error,
      }),
    );
  }
  const lost = failure.lostAfterSend || isRelayError(error, 'CR_ERR_CLOSED');
  if (isRelayError(error, 'CR_ERR_CLOSED') && failure.timeLeftMs > 0) return { action: 'republish' };
  // Not the broker's answer (the client refused to encode it, say): passed on as it is.
  if (error !== undefined && !isRelayError(error)) return reject(error);
  return reject(markerTimeoutError(what, failure.timeoutMs, lost, error));
}

/**
 * No confirm within PUBLISH_TIMEOUT: `CR_ERR_OUTCOME_UNKNOWN` once a channel was lost after the marker
 * was sent (it may be stored), else `CR_ERR_PUBLISH_TIMEOUT`. Either way: send it again.
 */
export function markerTimeoutError(what: string, timeoutMs: number, lost: boolean, cause?: unknown): RelayError {
  const within = formatDuration(timeoutMs);
  return lost
    ? new RelayError(
        'CR_ERR_OUTCOME_UNKNOWN',
        `outcome unknown: the connection dropped before the broker confirmed the ${what}, and no confirm came within ${within} (PUBLISH_TIMEOUT); send it again`,
        { cause },
      )
    : new RelayError(
        'CR_ERR_PUBLISH_TIMEOUT',
        `the broker did not confirm the ${what} within ${within} (PUBLISH_TIMEOUT); it may be unreachable. Send it again`,
        { cause },
      );
}

const reject = (error: unknown): MarkerDecision => ({ action: 'reject', error });
