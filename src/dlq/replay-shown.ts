import type { DeadQueueSession } from './dead-queue-session.js';
import { replayOne } from './replay-one.js';
import { takeShown } from './take-shown.js';

/** The reason of a callback an operator cancelled on purpose (`callback-relay cancel`). */
export const CANCELED_REASON = 'canceled';

export interface ShownReplayResult {
  /** Republished to exchange P, confirmed, then removed from P.dead. */
  replayed: number;
  /** Shown, found, and left in P.dead because they were cancelled on purpose. */
  skippedCanceled: number;
}

/**
 * Replays exactly the messages of P.dead whose ids a page showed (one id per message), as `dlq replay`
 * does each (replay-dead.ts: a fresh callback with the same id, acked once the broker confirmed the
 * copy), or none with `CR_ERR_DEAD_CHANGED` when some are no longer there (take-shown.ts). Unless
 * `includeCanceled`, a message parked as `canceled` is left where it is: replaying a group or all
 * shown must not undo a cancel; replaying it is a choice of its own.
 */
export async function replayShown(session: DeadQueueSession, ids: readonly string[], includeCanceled: boolean): Promise<ShownReplayResult> {
  await session.requireExchange();
  const mandatory = (await session.delayMode()) === 'queues';
  return takeShown(session, ids, async (shown, ack) => {
    let replayed = 0;
    let skippedCanceled = 0;
    for (const { message, entry } of shown) {
      if (!includeCanceled && entry.reason === CANCELED_REASON) {
        skippedCanceled += 1;
        continue;
      }
      await replayOne(session, message, entry.id, mandatory);
      ack(message);
      replayed += 1;
    }
    return { replayed, skippedCanceled };
  });
}
