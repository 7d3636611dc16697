import type { Channel } from 'amqplib';
import type { AttemptReport, PipelineObserver } from '../consumer/observer.js';

/** Routing keys of outcome events on the topic exchange P.events. */
export type OutcomeType = 'delivered' | 'retry-scheduled' | 'dead';

/** The JSON body of an outcome event. The callback's payload is never included. */
export interface OutcomeEvent {
  type: OutcomeType;
  id: string;
  url: string;
  /** The attempt that produced this outcome (0 for an invalid message). */
  attempt: number;
  status: number | undefined;
  error: string | undefined;
  /** For `retry-scheduled`: when the next attempt is due. */
  nextAttemptAt: string | undefined;
  /** For `dead`: exhausted, rejected, invalid. */
  reason: string | undefined;
  at: string;
}

/**
 * Publishes outcome events so the service that published a callback can follow its fate (bind a
 * queue to P.events with `delivered`, `dead`, `#`…). Best effort by design: events are transient,
 * not confirmed, and dropped when the channel is gone; the callback itself is never affected.
 */
export function createOutcomeEvents(exchange: string, clock: () => number): PipelineObserver & { attach(channel: Channel): void } {
  let channel: Channel | undefined;
  const emit = (event: OutcomeEvent): void => {
    try {
      channel?.publish(exchange, event.type, Buffer.from(JSON.stringify(event)), { contentType: 'application/json', messageId: `${event.id}:${event.type}:${event.attempt}` });
    } catch {
      // The channel closed under us: the event is lost, the callback is not.
    }
  };
  const at = (): string => new Date(clock()).toISOString();
  const none = (): void => {};
  return {
    attach(next: Channel) {
      channel = next;
    },
    attempted(report: AttemptReport) {
      const { decision, outcome } = report;
      const type: OutcomeType = decision.kind === 'ack' ? 'delivered' : decision.kind === 'retry' ? 'retry-scheduled' : 'dead';
      emit({
        type,
        id: report.id,
        url: report.url,
        attempt: report.attempt,
        status: outcome.status,
        error: decision.kind === 'ack' ? undefined : (outcome.error ?? decision.why),
        nextAttemptAt: report.nextAttemptAt,
        reason: decision.kind === 'dead' ? decision.reason : undefined,
        at: at(),
      });
    },
    invalid(id: string, error: string) {
      emit({ type: 'dead', id, url: '', attempt: 0, status: undefined, error, nextAttemptAt: undefined, reason: 'invalid', at: at() });
    },
    moved: none,
    confirmed: none,
    transition: none,
    inFlight: none,
  };
}
