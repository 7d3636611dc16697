import type { GetMessage } from 'amqplib';
import type { DeadQueueSession } from './dead-queue-session.js';
import { dlqEntry, type DlqEntry } from './dlq-entry.js';
import { returnDeadMessages } from './return-dead-messages.js';

export interface DeadListing {
  /** The first `limit` messages of P.dead, oldest first. */
  entries: DlqEntry[];
  /** Ready messages in P.dead when the listing started. */
  total: number;
  /** Messages put back as fresh copies because of their delivery count (see needs-refresh.ts). */
  refreshed: number;
}

/**
 * Reads up to `limit` messages from the head of P.dead without removing any: each is taken with
 * basic.get and manual ack, so the broker keeps it as unacked, and all are put back at the end
 * (also if reading fails half-way; should this process die, the broker returns them itself).
 * Holding them until the end is what makes every basic.get return the next message, not the same one.
 */
export async function listDead(session: DeadQueueSession, limit: number, now: () => Date = () => new Date()): Promise<DeadListing> {
  const peeked = await peekDead(session, limit, now);
  return { entries: peeked.messages.map((message) => message.entry), total: peeked.total, refreshed: peeked.refreshed };
}

/** A message of P.dead as it was read: its entry, and its body and headers as stored. */
export interface PeekedDead {
  entry: DlqEntry;
  content: Buffer;
  headers: Record<string, unknown>;
}

/** As `listDead`, with each message's body and headers (the console shows them). */
export async function peekDead(
  session: DeadQueueSession,
  limit: number,
  now: () => Date = () => new Date(),
): Promise<Omit<DeadListing, 'entries'> & { messages: PeekedDead[] }> {
  const taken: GetMessage[] = [];
  let refreshed = 0;
  let failure: unknown;
  try {
    while (taken.length < limit) {
      const message = await session.channel.get(session.names.deadQueue, { noAck: false });
      if (message === false) break;
      taken.push(message);
    }
  } catch (error) {
    failure = error;
  }
  // If the channel died, the broker has already returned everything; the first error is the one to report.
  refreshed = await returnDeadMessages(session, taken).catch((error: unknown) => ((failure ??= error), 0));
  if (failure !== undefined) throw failure;
  const at = now();
  const messages = taken.map((message) => ({
    entry: dlqEntry(message, at),
    content: message.content,
    headers: message.properties.headers ?? {},
  }));
  return { messages, total: session.messageCount, refreshed };
}
