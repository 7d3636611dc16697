import type { Message } from 'amqplib';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import type { DeadQueueSession } from './dead-queue-session.js';
import { replayPublishOptions } from './replay-publish-options.js';

/**
 * Republishes one message of P.dead to exchange P with routing key `deliver`: a fresh callback with
 * the same id, stamped with the time of the replay (replay-publish-options.ts). Resolves once the
 * broker confirmed the copy, and only then may the caller ack the original. `mandatory` in queues
 * mode, where a copy nothing is bound for comes back instead of being dropped (replay-dead.ts).
 */
export async function replayOne(session: DeadQueueSession, message: Message, id: string | null, mandatory: boolean): Promise<void> {
  const { channel, names } = session;
  const options = { ...replayPublishOptions(message.properties, id, new Date().toISOString()), mandatory };
  // One publish at a time on this channel: a return is matched without a header of ours on the copy.
  await publishConfirmed(
    channel,
    { exchange: names.exchange, routingKey: names.routingKey },
    message.content,
    options,
    session.publishTimeoutMs,
    'serial',
  );
}
