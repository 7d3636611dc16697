/**
 * The package's stable error codes, each with what it means (docs/errors.md is the table for
 * readers; a unit test keeps the two equal). Callers branch on `code`, never on message text.
 */
export const ERROR_CODES = {
  CR_ERR_CONFIG: 'a setting has an invalid value (the message names the setting and the value)',
  CR_ERR_USAGE: 'a CLI command or flag, or a console form field, is wrong (the message names it); the CLI exits 2, the console answers 400',
  CR_ERR_DEAD_CHANGED:
    'P.dead no longer holds every message a console page showed (taken by another view, replayed or purged meanwhile); nothing was done',
  CR_ERR_INVALID_CALLBACK: 'a callback failed validation (`field` names the offending field)',
  CR_ERR_PUBLISH_TIMEOUT: 'the broker did not confirm a publish in time (unreachable or blocked)',
  CR_ERR_PUBLISH_NACKED: 'the broker refused a publish (negative confirm)',
  CR_ERR_PUBLISH_RETURNED: 'the broker returned a mandatory publish: no queue is bound for it',
  CR_ERR_BUFFER_FULL: 'too many publishes are waiting for the broker; nothing was buffered',
  CR_ERR_OUTCOME_UNKNOWN:
    'the connection dropped before the broker confirmed a publish, and republishing it got no confirm in time: it may or may not be queued (republish with the same id)',
  CR_ERR_EVENT_NOT_STORED:
    'EVENTS=durable and the broker did not store an outcome event, even when published once more: the callback was settled as decided all the same (acked, its retry or dead copy stored), without its event',
  CR_ERR_CLOSED: 'the publisher, worker or channel was closed',
  CR_ERR_BROKER_UNREACHABLE: 'no broker of AMQP_URL accepted a connection (the message names them, without passwords)',
  CR_ERR_TOPOLOGY: 'the broker refused to declare the topology (e.g. a queue exists with other arguments)',
  CR_ERR_TOPOLOGY_MISSING:
    'a publisher found no topology on the broker (exchange P, or P.delay in queues mode): run `npx callback-relay topology` (`npm run topology`) with an admin account, or start a worker; nothing was published',
  CR_ERR_DELAY_MODE: 'the requested delay mode cannot run on this broker',
  CR_ERR_UNAUTHORIZED: 'an HTTP ingest request lacked a valid bearer token',
  CR_ERR_INTERNAL: 'the HTTP ingest failed unexpectedly (its log says why; the answer does not)',
  CR_ERR_INGEST_BUSY: 'an HTTP ingest replica already holds INGEST_INFLIGHT_BYTES of request bodies; the request was not read',
  CR_ERR_IDEMPOTENCY_KEY_REUSED:
    'an HTTP ingest request reused an Idempotency-Key this replica saw with another callback within INGEST_IDEMPOTENCY_WINDOW; it was not stored (422)',
  CR_ERR_REQUEST_TIMEOUT: 'an HTTP ingest request did not arrive in full within INGEST_REQUEST_TIMEOUT; it was not read',
  CR_ERR_FORBIDDEN_TARGET:
    "TARGET_POLICY refused a callback URL: its host resolves to a forbidden address, or to the worker's own broker on one of its ports",
  CR_ERR_LOG_MISSING:
    'an order log stream (P.ordered.log.<i>) does not exist, or is a queue that is not a stream: nothing was read from it',
  CR_ERR_LOG_READ_TIMEOUT:
    'reading one record of an order log, no record at or after its offset arrived in time (the offset is past the end of the log); reading a whole log, it did not fall quiet in time',
  CR_ERR_SIGNATURE_MISSING: '`webhook-id`, `webhook-timestamp` or `webhook-signature` is absent or empty',
  CR_ERR_SIGNATURE_INVALID: 'a signature header is malformed, or no `v1` signature matches any secret',
  CR_ERR_SIGNATURE_EXPIRED: '`webhook-timestamp` is further than the tolerance from now',
} as const;

export type RelayErrorCode = keyof typeof ERROR_CODES;

/** The one base error of the package; `code` is stable, `field` names the bad input where there is one. */
export class RelayError<Code extends RelayErrorCode = RelayErrorCode> extends Error {
  readonly code: Code;
  readonly field: string | undefined;

  constructor(code: Code, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RelayError';
    this.code = code;
    this.field = options.field;
  }
}

export const isRelayError = (error: unknown, code?: RelayErrorCode): error is RelayError =>
  error instanceof RelayError && (code === undefined || error.code === code);
