import amqplib from 'amqplib';
import { inject } from 'vitest';
import { sleep } from './modes.js';

/**
 * The message count of a queue, asked on a connection of its own; waits until the queue exists (a
 * check of a missing queue closes the channel it was asked on with a 404, so each try gets a new one).
 */
export async function queueDepth(queue: string, timeoutMs = 10_000): Promise<number> {
  const connection = await amqplib.connect(inject('amqpUrl'));
  try {
    for (const deadline = Date.now() + timeoutMs; ; await sleep(100)) {
      const channel = await connection.createChannel();
      channel.on('error', () => {}); // a 404 closes only this channel
      try {
        return (await channel.checkQueue(queue)).messageCount;
      } catch (error) {
        if (Date.now() > deadline) throw error;
      } finally {
        await channel.close().catch(() => {});
      }
    }
  } finally {
    await connection.close();
  }
}
