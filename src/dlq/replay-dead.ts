import type { GetMessage } from 'amqplib';
import type { DeadQueueSession } from './dead-queue-session.js';
import { dlqEntry } from './dlq-entry.js';
import { replayOne } from './replay-one.js';
import { moveToTail, returnDeadMessages } from './return-dead-messages.js';
import { selectForReplay, unmatchedIds, type ReplaySelector } from './select-for-replay.js';

export interface ReplayResult {
  /** Republished to exchange P, confirmed, then removed from P.dead. */
  replayed: number;
  /** Looked at but not selected, and put back untouched. */
  kept: number;
  /** Messages looked at: the first `examined` messages of P.dead. */
  examined: number;
  /** `--id`s that matched no message looked at. */
  notFound: string[];
  /** Of `kept`, those moved to the tail of P.dead (copy, confirm, ack) instead of being held. */
  movedToTail: number;
}

/** What the unselected messages held until the end may take, by content size (see below). */
export const MAX_HELD_BYTES = 64 * 1024 * 1024;

/**
 * Replays selected messages from the head of P.dead. Each selected one is republished to exchange
 * P with routing key `deliver` (no `x-delay`, so it routes at once in both delay modes) and acked
 * only after the broker confirmed the copy: an interruption duplicates at worst, and receivers
 * deduplicate on webhook-id, which stays the callback id. Unselected messages are held unacked, so
 * basic.get moves past them, and returned untouched at the end.
 *
 * At most `limit` messages are looked at, and never more than P.dead held when the session opened:
 * a callback that fails again while we run is parked again behind them, and must not be replayed
 * a second time in the same run. Unselected messages are held in this process up to `maxHeldBytes`
 * of content; past it, each further one is moved to the tail of P.dead as a fresh copy (confirmed,
 * then acked), so that `--id` over a large DLQ never loads all of it and still looks at every message.
 *
 * In queues mode exchange P is a direct exchange and the copy is published `mandatory`: should
 * nothing be bound (a topology half deleted), the broker returns it rather than dropping it and
 * acking, and the original stays in P.dead. The plugin's exchange does not support the flag. The
 * copies go one at a time, so a return is matched to its publish without a token: no header of the
 * relay's own survives into the replayed copy (see replay-publish-options.ts).
 */
export async function replayDead(
  session: DeadQueueSession,
  selector: ReplaySelector,
  limit: number | undefined,
  maxHeldBytes: number = MAX_HELD_BYTES,
): Promise<ReplayResult> {
  const { channel, names } = session;
  await session.requireExchange();
  const mandatory = (await session.delayMode()) === 'queues';
  const window = Math.min(limit ?? Number.POSITIVE_INFINITY, session.messageCount);
  const kept: GetMessage[] = [];
  const seenIds: Array<string | null> = [];
  let heldBytes = 0;
  let movedToTail = 0;
  let replayed = 0;
  let examined = 0;
  let failure: unknown;
  try {
    while (examined < window) {
      const message = await channel.get(names.deadQueue, { noAck: false });
      if (message === false) break;
      examined += 1;
      const entry = dlqEntry(message, new Date());
      seenIds.push(entry.id);
      if (!selectForReplay(entry, selector)) {
        if (heldBytes + message.content.length <= maxHeldBytes) {
          kept.push(message);
          heldBytes += message.content.length;
        } else {
          await moveToTail(session, message, kept);
          movedToTail += 1;
        }
        continue;
      }
      try {
        await replayOne(session, message, entry.id, mandatory);
      } catch (error) {
        kept.push(message);
        throw error;
      }
      channel.ack(message);
      replayed += 1;
    }
  } catch (error) {
    failure = error;
  }
  // If the channel died, the broker has already returned everything; the first error is the one to report.
  await returnDeadMessages(session, kept).catch((error: unknown) => (failure ??= error));
  if (failure !== undefined) throw failure;
  return { replayed, kept: kept.length + movedToTail, examined, notFound: unmatchedIds(selector, seenIds), movedToTail };
}
