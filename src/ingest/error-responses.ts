import { isRelayError, type RelayErrorCode } from '../errors.js';

/** The JSON body of every error answer: a stable code, a message, the field at fault, whether to retry. */
export interface ErrorBody {
  code: RelayErrorCode;
  message: string;
  field?: string;
  /** true: the callback may be sent again, with the same id or Idempotency-Key. */
  retry: boolean;
}

export interface ErrorResponse {
  status: number;
  body: ErrorBody;
}

const RETRY_SAME_KEY = 'retry with the same Idempotency-Key (or id): the relay will not create a second callback id';

/**
 * The HTTP answer for an error out of validation or `publish()`, by its code:
 * - invalid input: 400, nothing published;
 * - CR_ERR_BUFFER_FULL: 429, nothing published;
 * - no confirm (timeout, outcome unknown), a nack, a return (no queue bound), or a closing publisher: 503, stored or not.
 * Anything else (a topology the broker refused, a bug) is a 500.
 */
export function errorResponse(error: unknown): ErrorResponse {
  if (!isRelayError(error)) return { status: 500, body: { code: 'CR_ERR_INTERNAL', message: 'internal error', retry: true } };
  const { code, message } = error;
  switch (code) {
    case 'CR_ERR_INVALID_CALLBACK':
      return { status: 400, body: { code, message, field: error.field, retry: false } };
    case 'CR_ERR_UNAUTHORIZED':
      return { status: 401, body: { code, message, retry: false } };
    case 'CR_ERR_BUFFER_FULL':
      return { status: 429, body: { code, message: `too many callbacks are waiting for the broker; nothing was stored: ${RETRY_SAME_KEY}`, retry: true } };
    case 'CR_ERR_PUBLISH_TIMEOUT':
    case 'CR_ERR_OUTCOME_UNKNOWN':
      return { status: 503, body: { code, message: `the broker did not confirm in time, so the callback may or may not be stored: ${RETRY_SAME_KEY}`, retry: true } };
    case 'CR_ERR_PUBLISH_NACKED':
      return { status: 503, body: { code, message: `the broker refused the callback; it was not stored: ${RETRY_SAME_KEY}`, retry: true } };
    case 'CR_ERR_PUBLISH_RETURNED':
      return { status: 503, body: { code, message: `the broker has no queue for the callback (a half-deleted topology); it was not stored: ${RETRY_SAME_KEY}`, retry: true } };
    case 'CR_ERR_CLOSED':
      return { status: 503, body: { code, message: `this ingest is shutting down; nothing was stored: ${RETRY_SAME_KEY}`, retry: true } };
    default:
      return { status: 500, body: { code, message, retry: true } };
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
  const segments = problem.instancePath.split('/').slice(1).map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'));
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
