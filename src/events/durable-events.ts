import type { ConfirmChannel } from 'amqplib';
import type { AttemptReport } from '../reports.js';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import { copyResult, type CopyResult } from '../settle/publish-copy.js';
import type { StoreEvent } from '../settle/settle.js';
import { eventMessageId, outcomeEventOf, workerName, type OutcomeEvent } from './outcome-events.js';

/** The `reason` of the `dead` event of a message no copy could be stored for, rejected to P.dead instead. */
export const UNSETTLED = 'unsettled';

/** What the pipeline asks of EVENTS=durable: the step that stores an outcome's event before its message is acked. */
export interface DurableEvents {
  forReport(channel: ConfirmChannel, report: AttemptReport): StoreEvent;
}

/**
 * EVENTS=durable: each outcome event is published persistent on the channel that settles its
 * callback, and settle acks the callback only once the broker has confirmed the event. A crash in
 * between leaves the callback unacked: it is attempted again and its event published again, under the
 * same `message_id` (`<id>:<type>:<attempt>`), so a consumer that deduplicates on it never misses a
 * final outcome nor counts one twice. Not mandatory: an event no queue is bound for is dropped by the
 * broker and still confirmed (https://www.rabbitmq.com/docs/confirms#when-publishes-are-confirmed).
 */
export function createDurableEvents(exchange: string, clock: () => number, timeoutMs: number, worker = workerName()): DurableEvents {
  const at = (): string => new Date(clock()).toISOString();
  return {
    forReport: (channel, report) => (rejected) => {
      const outcome = outcomeEventOf(report, worker, at());
      // The copy could not be stored and the original is about to be rejected to P.dead: say so.
      const stored: OutcomeEvent = rejected ? { ...outcome, type: 'dead', nextAttemptAt: undefined, reason: UNSETTLED } : outcome;
      return storeEvent(channel, exchange, stored, timeoutMs);
    },
  };
}

/** Publishes `event` persistent and waits for its confirm. Never rejects; a failure comes back with its cause. */
export function storeEvent(channel: ConfirmChannel, exchange: string, event: OutcomeEvent, timeoutMs: number): Promise<CopyResult> {
  const options = {
    persistent: true,
    contentType: 'application/json',
    messageId: eventMessageId(event),
    timestamp: Math.floor(Date.parse(event.at) / 1000),
  };
  const target = { exchange, routingKey: event.type };
  return copyResult(channel, publishConfirmed(channel, target, Buffer.from(JSON.stringify(event)), options, timeoutMs));
}
