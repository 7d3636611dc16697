import type { DeadQueueSession } from './dead-queue-session.js';

/**
 * Removes every ready message from P.dead and returns how many the broker removed. Messages another
 * session holds unacked at that moment (a concurrent `dlq list`) are not ready, so they survive.
 */
export async function purgeDead(session: DeadQueueSession): Promise<number> {
  const { messageCount } = await session.channel.purgeQueue(session.names.deadQueue);
  return messageCount;
}
