import type { GetMessage } from 'amqplib';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import { sleep, withTimeout } from '../util/with-timeout.js';
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
 * exited at once left P.dead short in the `dlq list` run right after it. So this then waits, best
 * effort and bounded, until the ready count has grown by one per message (a nack or a fresh copy).
 */
export async function returnDeadMessages(session: DeadQueueSession, messages: GetMessage[]): Promise<number> {
  const { channel, names } = session;
  if (messages.length === 0) return 0;
  const readyBefore = await readyCount(session);
  let refreshed = 0;
  for (const message of messages) {
    if (needsRefresh(message.properties.headers)) {
      await publishConfirmed(
        channel,
        { exchange: '', routingKey: names.deadQueue },
        message.content,
        refreshPublishOptions(message.properties),
        session.publishTimeoutMs,
      );
      channel.ack(message);
      refreshed += 1;
    } else {
      channel.nack(message, false, true);
    }
  }
  if (readyBefore !== undefined) await untilReady(session, readyBefore + messages.length);
  return refreshed;
}

/** Waits until P.dead holds `count` ready messages, at most RETURN_VISIBLE_WITHIN_MS; never throws. */
async function untilReady(session: DeadQueueSession, count: number): Promise<void> {
  const deadline = Date.now() + RETURN_VISIBLE_WITHIN_MS;
  while (Date.now() < deadline) {
    const ready = await readyCount(session, deadline - Date.now());
    if (ready === undefined || ready >= count) return;
    await sleep(20);
  }
}

/** P.dead's ready messages; undefined if the broker does not say within `withinMs` (or the channel is gone). */
async function readyCount(session: DeadQueueSession, withinMs = RETURN_VISIBLE_WITHIN_MS): Promise<number | undefined> {
  try {
    const ok = await withTimeout(
      session.channel.checkQueue(session.names.deadQueue),
      Math.max(1, withinMs),
      () => new Error('checkQueue timed out'),
    );
    return ok.messageCount;
  } catch {
    return undefined;
  }
}

/** Republishes `message` to P.dead (behind everything in it), confirmed, then acks it; on failure it is held like the others. */
export async function moveToTail(session: DeadQueueSession, message: GetMessage, held: GetMessage[]): Promise<void> {
  try {
    const target = { exchange: '', routingKey: session.names.deadQueue };
    await publishConfirmed(
      session.channel,
      target,
      message.content,
      { ...refreshPublishOptions(message.properties), mandatory: true },
      session.publishTimeoutMs,
      'serial',
    );
  } catch (error) {
    held.push(message);
    throw error;
  }
  session.channel.ack(message);
}
