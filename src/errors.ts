/**
 * Stable error codes. Callers branch on `code`, never on message text.
 * - `CR_ERR_CONFIG`: a setting has an invalid value (the message names the setting and the value).
 * - `CR_ERR_INVALID_CALLBACK`: a callback failed validation (`field` names the offending field).
 * - `CR_ERR_PUBLISH_TIMEOUT`: the broker did not confirm a publish in time (unreachable or blocked).
 * - `CR_ERR_PUBLISH_NACKED`: the broker refused a publish (negative confirm).
 * - `CR_ERR_BUFFER_FULL`: too many publishes are waiting for the broker; nothing was buffered.
 * - `CR_ERR_OUTCOME_UNKNOWN`: the connection dropped before the broker confirmed a publish, and
 *   republishing it got no confirm in time: it may or may not be queued (republish with the same id).
 * - `CR_ERR_EVENT_NOT_STORED`: EVENTS=durable and the broker did not store a callback's outcome event,
 *   so the callback was not acked: it went back to its queue to be attempted again.
 * - `CR_ERR_CLOSED`: the publisher or worker was closed.
 * - `CR_ERR_TOPOLOGY`: the broker refused to declare the topology (e.g. a queue exists with other arguments).
 * - `CR_ERR_DELAY_MODE`: the requested delay mode cannot run on this broker.
 * - `CR_ERR_UNAUTHORIZED`: an HTTP ingest request lacked a valid bearer token.
 * - `CR_ERR_INTERNAL`: the HTTP ingest failed unexpectedly (its log says why; the answer does not).
 */
export type RelayErrorCode =
  | 'CR_ERR_CONFIG'
  | 'CR_ERR_INVALID_CALLBACK'
  | 'CR_ERR_PUBLISH_TIMEOUT'
  | 'CR_ERR_PUBLISH_NACKED'
  | 'CR_ERR_BUFFER_FULL'
  | 'CR_ERR_OUTCOME_UNKNOWN'
  | 'CR_ERR_EVENT_NOT_STORED'
  | 'CR_ERR_CLOSED'
  | 'CR_ERR_TOPOLOGY'
  | 'CR_ERR_DELAY_MODE'
  | 'CR_ERR_UNAUTHORIZED'
  | 'CR_ERR_INTERNAL';

/** The one error class of the package; `code` is stable, `field` names the bad input where there is one. */
export class RelayError extends Error {
  readonly code: RelayErrorCode;
  readonly field: string | undefined;

  constructor(code: RelayErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RelayError';
    this.code = code;
    this.field = options.field;
  }
}

export const isRelayError = (error: unknown, code?: RelayErrorCode): error is RelayError =>
  error instanceof RelayError && (code === undefined || error.code === code);
