import type { DeadQueueSession } from './dead-queue-session.js';
import { takeShown } from './take-shown.js';

/**
 * Removes every ready message from P.dead and returns how many the broker removed. Messages another
 * session holds unacked at that moment (a concurrent `dlq list`) are not ready, so they survive.
 */
export async function purgeDead(session: DeadQueueSession): Promise<number> {
  const { messageCount } = await session.channel.purgeQueue(session.names.deadQueue);
  return messageCount;
}

/**
 * Removes the first `count` messages of P.dead, one basic.get each, and returns how many it removed
 * (fewer if P.dead ran out). After a prompt that showed `count`, this removes what the operator
 * agreed to: a callback parked while the question was open lands behind them and is kept, where a
 * queue purge would take it too.
 */
export async function purgeFirst(session: DeadQueueSession, count: number): Promise<number> {
  let removed = 0;
  while (removed < count && (await session.channel.get(session.names.deadQueue, { noAck: true })) !== false) removed += 1;
  return removed;
}

/**
 * Removes exactly the messages of P.dead whose ids a page showed (one id per message shown), and
 * returns how many: all of them, or none with `CR_ERR_DEAD_CHANGED` when some are no longer there
 * (take-shown.ts). Callbacks parked after the page was shown, and any other message, stay.
 */
export async function purgeShown(session: DeadQueueSession, ids: readonly string[]): Promise<number> {
  return takeShown(session, ids, async (shown, ack) => {
    for (const { message } of shown) ack(message);
    return shown.length;
  });
}
