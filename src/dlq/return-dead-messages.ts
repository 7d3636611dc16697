import type { GetMessage } from 'amqplib';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import type { DeadQueueSession } from './dead-queue-session.js';
import { needsRefresh, refreshPublishOptions } from './needs-refresh.js';

/**
 * Puts messages taken from P.dead back, untouched, in the order they were taken. Each one is
 * nacked with requeue, explicitly rather than by closing the channel: from RabbitMQ 4.3 an explicit
 * nack does not count toward a quorum queue's delivery limit, a dying channel does. Quorum queues
 * serve returned messages first, in the order returned, and classic queues put them back in place,
 * so the next `dlq list` shows the same order.
 *
 * A message whose delivery count is high is instead republished to P.dead as a fresh copy,
 * confirmed, then acked (see needs-refresh.ts); it moves to the tail. Returns how many were.
 */
export async function returnDeadMessages(session: DeadQueueSession, messages: GetMessage[]): Promise<number> {
  const { channel, names } = session;
  let refreshed = 0;
  for (const message of messages) {
    if (needsRefresh(message.properties.headers)) {
      await publishConfirmed(channel, { exchange: '', routingKey: names.deadQueue }, message.content, refreshPublishOptions(message.properties), session.publishTimeoutMs);
      channel.ack(message);
      refreshed += 1;
    } else {
      channel.nack(message, false, true);
    }
  }
  return refreshed;
}
