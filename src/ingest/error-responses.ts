import { isRelayError, type RelayErrorCode } from '../errors.js';
import { resendAdvice, type AssignedId } from './callback-ids.js';

/** The JSON body of every error answer: a stable code, a message, the field at fault, whether to retry. */
export interface ErrorBody {
  code: RelayErrorCode;
  message: string;
  field?: string;
  /** The id the callback was given, on every answer about a publish (429, 503, 500). */
  id?: string;
  /** true: the request may be sent again; the message says how to keep the callback's id. */
  retry: boolean;
}

export interface ErrorResponse {
  status: number;
  body: ErrorBody;
}

// The relay stores what the broker confirms and nothing else: no id registry, no deduplication.
const DEDUP =
  'the relay does not deduplicate: two stored copies are both delivered, with the same webhook-id, for the receiver to drop one';

/**
 * The HTTP answer for an error out of validation or `publish()`, by its code:
 * - invalid input: 400, nothing published;
 * - an Idempotency-Key seen with another callback: 422, nothing published;
 * - CR_ERR_BUFFER_FULL: 429, nothing published;
 * - no confirm (timeout, outcome unknown), a nack, a return (no queue bound), or a closing publisher: 503, stored or not;
 * - no topology declared yet (CR_ERR_TOPOLOGY_MISSING): 503, nothing published.
 * Anything else (a topology the broker refused, a bug) is a 500. With `assigned` (the error is about
 * publishing that callback) the answer carries its id and says how to send it again keeping the id.
 */
export function errorResponse(error: unknown, assigned?: AssignedId): ErrorResponse {
  const withId = (status: number, body: ErrorBody): ErrorResponse => ({ status, body: assigned ? { ...body, id: assigned.id } : body });
  const again = assigned ? resendAdvice(assigned) : 'send it again';
  // Without a callback, the failure came before anything was published.
  const maybe = assigned ? `; it may or may not be stored: ${again}; ${DEDUP}` : '';
  if (!isRelayError(error)) return withId(500, { code: 'CR_ERR_INTERNAL', message: `internal error${maybe}`, retry: true });
  const { code, message } = error;
  switch (code) {
    case 'CR_ERR_INVALID_CALLBACK':
      return { status: 400, body: { code, message, field: error.field, retry: false } };
    case 'CR_ERR_IDEMPOTENCY_KEY_REUSED':
      return withId(422, { code, message, field: 'Idempotency-Key', retry: false });
    case 'CR_ERR_UNAUTHORIZED':
      return { status: 401, body: { code, message, retry: false } };
    case 'CR_ERR_BUFFER_FULL':
      return withId(429, { code, message: `too many callbacks are waiting for the broker; nothing was stored: ${again}`, retry: true });
    case 'CR_ERR_PUBLISH_TIMEOUT':
    case 'CR_ERR_OUTCOME_UNKNOWN':
      return withId(503, {
        code,
        message: `the broker did not confirm in time, so the callback may or may not be stored: ${again}; ${DEDUP}`,
        retry: true,
      });
    case 'CR_ERR_PUBLISH_NACKED':
      return withId(503, { code, message: `the broker refused the callback; it was not stored: ${again}`, retry: true });
    case 'CR_ERR_PUBLISH_RETURNED':
      return withId(503, {
        code,
        message: `the broker has no queue for the callback (a half-deleted topology); it was not stored: ${again}`,
        retry: true,
      });
    case 'CR_ERR_CLOSED':
      return withId(503, { code, message: `this ingest is shutting down; nothing was stored: ${again}`, retry: true });
    case 'CR_ERR_TOPOLOGY_MISSING':
      return withId(503, {
        code,
        message: `the relay's queues are not declared on the broker yet; nothing was stored: ${again}`,
        retry: true,
      });
    default:
      return withId(500, { code, message: `${message}${maybe}`, retry: true });
  }
}

/** What Ajv reports about one failed check (the subset used here). */
export interface SchemaProblem {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/**
 * The field a JSON-schema failure is about, spelt as the library's validation spells fields:
 * `/callbacks/3/headers/x-a` → `callbacks[3].headers.x-a`; a missing or unknown property is named;
 * `request` is the request body as a whole (`body` is the callback's body field).
 */
export function schemaField(problem: SchemaProblem): string {
  const segments = problem.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
  const named = problem.params.missingProperty ?? problem.params.additionalProperty;
  if (typeof named === 'string') segments.push(named);
  let field = '';
  for (const segment of segments) field += /^\d+$/.test(segment) ? `[${segment}]` : field === '' ? segment : `.${segment}`;
  return field === '' ? 'request' : field;
}

/** A 400 for a failed JSON-schema check. */
export function schemaErrorResponse(problem: SchemaProblem): ErrorResponse {
  const field = schemaField(problem);
  const unknown = typeof problem.params.additionalProperty === 'string';
  const message = `${field}: ${unknown ? 'is not a known field' : (problem.message ?? 'is invalid')}`;
  return { status: 400, body: { code: 'CR_ERR_INVALID_CALLBACK', message, field, retry: false } };
}

/**
 * The answer to a request Node's HTTP parser cut before it reached a route: 408 when it did not
 * arrive in full within INGEST_REQUEST_TIMEOUT, 431 for headers over Node's limit, else 400.
 */
export function clientErrorResponse(errorCode: string | undefined, requestTimeoutMs: number): ErrorResponse {
  if (errorCode === 'ERR_HTTP_REQUEST_TIMEOUT') {
    const message = `request: not received in full within ${requestTimeoutMs} ms (INGEST_REQUEST_TIMEOUT); nothing was read or stored`;
    return { status: 408, body: { code: 'CR_ERR_REQUEST_TIMEOUT', message, field: 'request', retry: true } };
  }
  if (errorCode === 'HPE_HEADER_OVERFLOW')
    return {
      status: 431,
      body: { code: 'CR_ERR_INVALID_CALLBACK', message: 'request: the headers are too large', field: 'request', retry: false },
    };
  return {
    status: 400,
    body: { code: 'CR_ERR_INVALID_CALLBACK', message: 'request: not a valid HTTP/1.1 request', field: 'request', retry: false },
  };
}
