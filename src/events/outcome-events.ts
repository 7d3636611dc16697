import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Channel, ConsumeMessage } from 'amqplib';
import { maskUrl } from '../formats/mask-url.js';
import type { AttemptReport, PipelineObserver } from '../reports.js';
import { UnroutedPause } from './unrouted-pause.js';

/** How long an event type nobody listens for is not published before it is tried again. */
const UNROUTED_PAUSE_MS = 1_000;
/** How long after a probe no other event of its type is published: the probe's return may still come. */
const PROBE_WAIT_MS = 250;

/** Routing keys of outcome events on the topic exchange P.events. */
export type OutcomeType = 'delivered' | 'retry-scheduled' | 'dead' | 'canceled' | 'paused';

/** The JSON body of an outcome event. The callback's payload is never included. */
export interface OutcomeEvent {
  type: OutcomeType;
  id: string;
  /** The callback's URL as people may read it (maskUrl: user-info and query values `***`, no fragment); the delivery used the full URL. */
  url: string;
  /** The attempt that produced this outcome; for `canceled` and `paused`, the attempts made before (0 for an invalid message). */
  attempt: number;
  status: number | undefined;
  error: string | undefined;
  /** For `retry-scheduled`: when the next attempt is due. */
  nextAttemptAt: string | undefined;
  /** For `dead`: exhausted, rejected, invalid…; for `canceled`: canceled. */
  reason: string | undefined;
  /** How long the attempt took. */
  durationMs: number | undefined;
  /** The worker that made the attempt: `<host>/<pid>`. */
  worker: string;
  at: string;
}

/** Who made an attempt, as events name it. */
export const workerName = (): string => `${hostname()}/${process.pid}`;

/** An AMQP `message_id` is a short string: 255 bytes at most (amqplib refuses a longer one). */
const MAX_MESSAGE_ID_BYTES = 255;

/**
 * `<callback id>:<type>:<attempt>`, the same for every copy of one outcome. A callback id may take
 * the whole 255 bytes by itself; then its SHA-256 stands in for it (the body still names the id).
 */
export function eventMessageId(event: Pick<OutcomeEvent, 'id' | 'type' | 'attempt'>): string {
  const suffix = `:${event.type}:${event.attempt}`;
  const full = `${event.id}${suffix}`;
  if (Buffer.byteLength(full) <= MAX_MESSAGE_ID_BYTES) return full;
  return `sha256-${createHash('sha256').update(event.id).digest('hex')}${suffix}`;
}

/**
 * Publishes outcome events so the service that published a callback can follow its fate (bind a
 * queue to P.events with `delivered`, `dead`, `#`…). Best effort by design: events are transient,
 * not confirmed, and dropped when the channel is gone; the callback itself is never affected. A type
 * no queue is bound for is not published (see UnroutedPause).
 */
export function createOutcomeEvents(
  exchange: string,
  clock: () => number,
  worker = workerName(),
): PipelineObserver & { attach(channel: Channel): void } {
  let channel: Channel | undefined;
  const unrouted = new UnroutedPause(UNROUTED_PAUSE_MS, clock, PROBE_WAIT_MS);
  const at = (): string => new Date(clock()).toISOString();
  const emit = (report: AttemptReport): void => {
    // Checked before the event is built: while nobody listens, most events are skipped here.
    if (!channel || !unrouted.shouldPublish(outcomeTypeOf(report))) return;
    const event = outcomeEventOf(report, worker, at());
    try {
      // mandatory: the broker returns an event no queue is bound for, and its type is paused.
      channel.publish(exchange, event.type, Buffer.from(JSON.stringify(event)), {
        contentType: 'application/json',
        messageId: eventMessageId(event),
        mandatory: true,
      });
    } catch {
      // The channel closed under us: the event is lost, the callback is not.
    }
  };
  const none = (): void => {};
  return {
    attach(next: Channel) {
      const previous = channel;
      channel = next;
      next.on('return', (message: ConsumeMessage) => {
        if (message.fields.exchange === exchange) unrouted.returned(message.fields.routingKey);
      });
      // The setup that attaches a channel re-runs whenever the settling channel is re-created, not
      // only after a reconnect: the previous events channel may still be open.
      if (previous && previous !== next)
        void Promise.resolve()
          .then(() => previous.close())
          .catch(() => {});
    },
    reported: emit,
    confirmed: none,
    settleFallback: none,
    transition: none,
    inFlight: none,
    moved: none,
  };
}

/** The event of a report: an attempt's (or a fail-fast's) decision carried out, or a message parked or held unattempted. */
export function outcomeEventOf(report: AttemptReport, worker: string, at: string): OutcomeEvent {
  if (report.kind === 'invalid') return invalidEvent(report.id, report.error, worker, at);
  // Events are read by people (P.history, the console, the CLI): no credential of the URL goes in.
  const { id, attempt } = report;
  const url = maskUrl(report.url);
  if (report.kind === 'held') {
    return {
      type: 'paused',
      id,
      url,
      attempt,
      status: undefined,
      error: undefined,
      nextAttemptAt: undefined,
      reason: undefined,
      durationMs: undefined,
      worker,
      at,
    };
  }
  if (report.kind === 'canceled') {
    return {
      type: 'canceled',
      id,
      url,
      attempt,
      status: undefined,
      error: 'canceled',
      nextAttemptAt: undefined,
      reason: 'canceled',
      durationMs: 0,
      worker,
      at,
    };
  }
  if (report.kind === 'expired') {
    return {
      type: 'dead',
      id,
      url,
      attempt,
      status: undefined,
      error: report.why,
      nextAttemptAt: undefined,
      reason: 'exhausted',
      durationMs: 0,
      worker,
      at,
    };
  }
  const { decision, outcome } = report;
  return {
    type: outcomeTypeOf(report),
    id,
    url,
    attempt,
    status: outcome.status,
    error: decision.kind === 'ack' ? undefined : (outcome.error ?? decision.why),
    nextAttemptAt: report.nextAttemptAt,
    reason: decision.kind === 'dead' ? decision.reason : undefined,
    durationMs: outcome.durationMs,
    worker,
    at,
  };
}

/** The type (routing key) of a report's event. */
export function outcomeTypeOf(report: AttemptReport): OutcomeType {
  switch (report.kind) {
    case 'invalid':
    case 'expired':
      return 'dead';
    case 'held':
      return 'paused';
    case 'canceled':
      return 'canceled';
    default:
      return report.decision.kind === 'ack' ? 'delivered' : report.decision.kind === 'retry' ? 'retry-scheduled' : 'dead';
  }
}

/** The `dead` event of a message that could not be decoded (reason `invalid`). */
export const invalidEvent = (id: string, error: string, worker: string, at: string): OutcomeEvent => ({
  type: 'dead',
  id,
  url: '',
  attempt: 0,
  status: undefined,
  error,
  nextAttemptAt: undefined,
  reason: 'invalid',
  durationMs: undefined,
  worker,
  at,
});
