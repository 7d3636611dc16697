import type { GetMessage } from 'amqplib';
import { RelayError } from '../errors.js';
import type { DeadQueueSession } from './dead-queue-session.js';
import { dlqEntry, type DlqEntry } from './dlq-entry.js';
import { MAX_HELD_BYTES } from './replay-dead.js';
import { moveToTail, returnDeadMessages } from './return-dead-messages.js';

/**
 * The ids a page showed, as a multiset: the same callback may be parked twice (replayed, failed
 * again), and each shown copy is one message to find. Pure.
 */
export class ShownIds {
  private readonly wanted = new Map<string, number>();
  private left = 0;

  constructor(ids: readonly string[]) {
    for (const id of ids) {
      this.wanted.set(id, (this.wanted.get(id) ?? 0) + 1);
      this.left += 1;
    }
  }

  /** Whether a message with `id` is one still to find; if so it counts as found. */
  take(id: string | null): boolean {
    const count = id === null ? 0 : (this.wanted.get(id) ?? 0);
    if (count === 0 || id === null) return false;
    this.wanted.set(id, count - 1);
    this.left -= 1;
    return true;
  }

  /** Shown messages not found yet. */
  get remaining(): number {
    return this.left;
  }
}

/** The message found for every shown id, with its entry as read. */
export interface ShownMessage {
  message: GetMessage;
  entry: DlqEntry;
}

/**
 * Takes from P.dead exactly the messages whose ids a page showed (`ids`, one per shown message),
 * hands them to `act`, and puts every other message it took back untouched; `act` acks (with `ack`)
 * those it handled, and those it did not ack go back too, also when it throws. Messages are taken with basic.get and
 * manual ack, so nothing is removed unless acked, and held until the end so each get returns the next
 * one; past `maxHeldBytes` a message not shown is moved to the tail instead (copy, confirm, ack).
 *
 * It looks at most at the messages ready when the session opened (those parked later are not the
 * shown ones) and stops once all are found. If it finds fewer than shown (another view holds some
 * unacked, or they were replayed or purged meanwhile), it acts on none: all go back and it throws
 * `CR_ERR_DEAD_CHANGED` saying how many it found. Going back, each is nacked with requeue, or
 * refreshed past a high delivery count (return-dead-messages.ts; quorum-queue delivery limits:
 * https://www.rabbitmq.com/docs/quorum-queues#poison-message-handling).
 */
export async function takeShown<T>(
  session: DeadQueueSession,
  ids: readonly string[],
  act: (shown: ShownMessage[], ack: (message: GetMessage) => void) => Promise<T>,
  maxHeldBytes: number = MAX_HELD_BYTES,
): Promise<T> {
  const wanted = new ShownIds(ids);
  const shown: ShownMessage[] = [];
  const held: GetMessage[] = [];
  let heldBytes = 0;
  let examined = 0;
  let failure: unknown;
  let outcome: { result: T } | undefined;
  try {
    while (wanted.remaining > 0 && examined < session.messageCount) {
      const message = await session.channel.get(session.names.deadQueue, { noAck: false });
      if (message === false) break;
      examined += 1;
      const entry = dlqEntry(message, new Date());
      if (wanted.take(entry.id)) {
        shown.push({ message, entry });
      } else if (heldBytes + message.content.length <= maxHeldBytes) {
        held.push(message);
        heldBytes += message.content.length;
      } else {
        await moveToTail(session, message, held);
      }
    }
    if (wanted.remaining > 0) {
      held.push(...shown.map((s) => s.message));
      throw new RelayError(
        'CR_ERR_DEAD_CHANGED',
        `found ${shown.length} of the ${ids.length} message(s) shown among the ${examined} looked at in ${session.names.deadQueue} (another view may hold some, or they were replayed or purged meanwhile): nothing was done; reload the page`,
      );
    }
    const acked = new Set<GetMessage>();
    const ack = (message: GetMessage): void => {
      session.channel.ack(message);
      acked.add(message);
    };
    try {
      outcome = { result: await act(shown, ack) };
    } finally {
      // What `act` did not ack goes back; acked messages are gone (acking one twice would close the channel).
      held.push(...shown.map((s) => s.message).filter((m) => !acked.has(m)));
    }
  } catch (error) {
    failure = error;
  }
  // If the channel died, the broker has already returned everything; the first error is the one to report.
  await returnDeadMessages(session, held).catch((error: unknown) => (failure ??= error));
  if (failure !== undefined || outcome === undefined) throw failure;
  return outcome.result;
}
