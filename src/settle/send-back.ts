import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { ConfirmWait } from '../amqp/publish-confirmed.js';
import { derivedId } from '../message/derived-id.js';
import { HEADER, carriedHeaders, readAttempt, readReturns } from '../message/headers.js';
import { nextReturn } from '../policy/return-bound.js';
import { sleep } from '../util/with-timeout.js';
import { publishCopy, type CopyResult } from './publish-copy.js';

/** Where a message that could not be settled goes back to (its own queue), and where it is parked past the bound. */
export interface ReturnRoute {
  queue: string;
  deadQueue: string;
}

/**
 * What became of it: back in its queue with its count raised, parked in P.dead as `unsettled`, or,
 * when neither copy could be stored, rejected without requeue for the broker to dead-letter (every
 * queue a worker consumes names P.dead as its dead-letter target).
 */
export type SendBackResult = 'returned' | 'parked' | 'rejected';

/**
 * Gives a message the worker could not settle back to its own queue, bounded by a count of the
 * relay's own (policy/return-bound.ts), never by a requeue, which RabbitMQ 4.3 no longer counts: it
 * waits (holding the message, so nothing loops hot), publishes a copy with `x-callback-returns`
 * raised, confirmed, then acks the original. Past the bound the copy goes to P.dead instead, reason
 * `unsettled`, attempt count and `why` recorded. A copy that cannot be stored rejects the original
 * without requeue. `known` is the callback's id when the worker read it; `stopping` cuts the wait
 * short (the worker stops). Throws when the channel closed: the broker has requeued the original then (a
 * channel's close counts toward a quorum queue's delivery limit on every version).
 */
export async function sendBack(
  channel: ConfirmChannel,
  message: ConsumeMessage,
  route: ReturnRoute,
  why: string,
  wait: ConfirmWait,
  known?: string,
  stopping?: AbortSignal,
): Promise<SendBackResult> {
  const headers = message.properties.headers;
  const step = nextReturn(readReturns(headers));
  // Without one, the id it had: derived-id.ts hashes the headers, which the count changes.
  const id = known ?? (typeof message.properties.messageId === 'string' ? message.properties.messageId : derivedId(message));
  const carried = carriedHeaders(headers);
  let result: CopyResult;
  if (step.kind === 'return') {
    // A stopping worker puts it back now: the count is raised all the same, so the bound holds.
    await sleep(step.delayMs, stopping);
    result = await publishCopy(
      channel,
      { exchange: '', routingKey: route.queue, headers: { ...carried, [HEADER.returns]: step.returns }, mandatory: true },
      message,
      id,
      wait,
    );
  } else {
    const parked = {
      ...carried,
      [HEADER.reason]: 'unsettled',
      [HEADER.attempts]: readAttempt(headers) - 1,
      [HEADER.lastError]: why,
      [HEADER.returns]: step.returns - 1,
    };
    result = await publishCopy(channel, { exchange: '', routingKey: route.deadQueue, headers: parked, mandatory: true }, message, id, wait);
  }
  if (result.stored) {
    channel.ack(message);
    return step.kind === 'return' ? 'returned' : 'parked';
  }
  if (result.cause === 'closed') throw result.error;
  // Throws on a channel that closed meanwhile: the broker has requeued the original then.
  channel.nack(message, false, false);
  return 'rejected';
}
