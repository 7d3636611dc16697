import type { TriedReport } from '../reports.js';
import type { Decision } from '../policy/decide.js';

/** What an attempt came to, as a span attribute: the decision, not the raw status, says it. */
export type AttemptOutcome = 'success' | 'retryable' | 'terminal';

export type SpanAttributes = Record<string, string | number>;

/** What an attempt span records once the attempt is decided; `error` set marks the span as failed. */
export interface AttemptResult {
  attributes: SpanAttributes;
  error: string | undefined;
}

/** What the attempt span knows before the request: the callback, its target and its attempt number. */
export function attemptStartAttributes(id: string, origin: string, attempt: number, method: string): SpanAttributes {
  return { 'callback.id': id, 'callback.target.origin': origin, 'callback.attempt': attempt, 'http.request.method': method };
}

/**
 * The attempt's outcome and what follows from it. A retryable failure with no attempts left is still
 * `retryable` (the dead reason says `exhausted`).
 */
export function attemptResult({ outcome, decision }: Pick<TriedReport, 'outcome' | 'decision'>): AttemptResult {
  const attributes: SpanAttributes = { 'callback.outcome': attemptOutcome(decision) };
  if (outcome.status !== undefined) attributes['http.response.status_code'] = outcome.status;
  if (decision.kind === 'retry') attributes['callback.next_delay_ms'] = decision.delayMs;
  if (decision.kind === 'dead') attributes['callback.dead_reason'] = decision.reason;
  if (decision.kind === 'ack') return { attributes, error: undefined };
  // https://opentelemetry.io/docs/specs/semconv/attributes-registry/error/: the status code, else the error's own code.
  attributes['error.type'] = outcome.status !== undefined ? String(outcome.status) : errorCode(outcome.error);
  return { attributes, error: outcome.error ?? decision.why };
}

function attemptOutcome(decision: Decision): AttemptOutcome {
  if (decision.kind === 'ack') return 'success';
  if (decision.kind === 'retry' || decision.reason === 'exhausted') return 'retryable';
  return 'terminal';
}

/** `ECONNREFUSED: connect …` → `ECONNREFUSED`; outcome errors start with their code. */
const errorCode = (error: string | undefined): string =>
  error === undefined ? '_OTHER' : (error.split(':', 1)[0] ?? error).trim() || '_OTHER';

/** The producer span's attributes (OpenTelemetry messaging conventions, RabbitMQ). */
export function publishAttributes(id: string, origin: string, delayMs: number): SpanAttributes {
  const attributes: SpanAttributes = {
    'messaging.system': 'rabbitmq',
    'messaging.operation.type': 'send',
    'messaging.message.id': id,
    'callback.id': id,
    'callback.target.origin': origin,
  };
  if (delayMs > 0) attributes['callback.delay_ms'] = delayMs;
  return attributes;
}
