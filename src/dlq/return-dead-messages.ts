import type { GetMessage } from 'amqplib';
import { setTimeout as sleep } from 'node:timers/promises';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import type { DeadQueueSession } from './dead-queue-session.js';
import { needsRefresh, refreshPublishOptions } from './needs-refresh.js';

/** How long `returnDeadMessages` waits, at most, to see its returns counted in P.dead. */
export const RETURN_VISIBLE_WITHIN_MS = 2_000;

/**
 * Puts messages taken from P.dead back, untouched, in the order they were taken. Each one is
 * nacked with requeue, explicitly rather than by closing the channel: from RabbitMQ 4.3 an explicit
 * nack does not count toward a quorum queue's delivery limit, a dying channel does. Quorum queues
 * serve returned messages first, in the order returned, and classic queues put them back in place,
 * so the next `dlq list` shows the same order.
 *
 * A message whose delivery count is high is instead republished to P.dead as a fresh copy,
 * confirmed, then acked (see needs-refresh.ts); it moves to the tail. Returns how many were.
 *
 * A nack has no reply, and a quorum queue applies it after the channel has moved on: a command that
 * exited at once could leave P.dead short in the next `dlq list` or the management UI. So this waits,
 * bounded, until the ready count has grown by the messages nacked. Another reader taking messages
 * meanwhile can only make the wait end at its bound, never lose a message.
 */
export async function returnDeadMessages(session: DeadQueueSession, messages: GetMessage[]): Promise<number> {
  const { channel, names } = session;
  const held: GetMessage[] = [];
  for (const message of messages) {
    if (needsRefresh(message.properties.headers)) {
      await publishConfirmed(channel, { exchange: '', routingKey: names.deadQueue }, message.content, refreshPublishOptions(message.properties), session.publishTimeoutMs);
      channel.ack(message);
    } else {
      held.push(message);
    }
  }
  if (held.length === 0) return messages.length;
  const readyBefore = (await channel.checkQueue(names.deadQueue)).messageCount;
  for (const message of held) channel.nack(message, false, true);
  const deadline = Date.now() + RETURN_VISIBLE_WITHIN_MS;
  while ((await channel.checkQueue(names.deadQueue)).messageCount < readyBefore + held.length && Date.now() < deadline) await sleep(20);
  return messages.length - held.length;
}
