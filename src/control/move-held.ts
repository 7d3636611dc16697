import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { settle } from '../settle/settle.js';
import { laneBucket, laneOf, type TopologyNames } from '../topology/topology-names.js';

/**
 * Moves a message consumed from P.paused.check to `queue` as settle holds a paused target's callback
 * (settle/settle.ts): a confirmed copy with the callback's headers, attempt count included, then
 * the ack. A returned or nacked copy is published once more (after `redeclare`, when given); one that
 * still cannot be stored goes back to P.paused.check a bounded number of times, then to P.dead as
 * `unsettled` (settle/send-back.ts): never dropped, never requeued without a count of ours. Either
 * way it is always in a queue, or unacked on this channel. `stopping` (the reader closes) sends it
 * back without the send-back's wait.
 */
export async function moveTo(
  channel: ConfirmChannel,
  message: ConsumeMessage,
  queue: string,
  names: TopologyNames,
  timeoutMs: number,
  stopping?: AbortSignal,
): Promise<void> {
  const id = String(message.properties.messageId ?? '');
  const returnTo = { queue: names.pausedCheckQueue, deadQueue: names.deadQueue };
  try {
    await settle({ kind: 'hold', queue, returnTo }, { id }, { channel, message, confirmTimeoutMs: timeoutMs, stopping });
  } catch {
    // The channel closed: the broker has requeued the message.
  }
}

/**
 * Where a held callback goes from P.paused.check: back to P.paused while its origin is paused, else
 * its own lane. A body the relay cannot read goes to lane 0, whose worker parks it as invalid.
 */
export function heldDestination(content: Buffer, names: TopologyNames, isPaused: (origin: string) => boolean): string {
  let origin: string | undefined;
  try {
    origin = new URL((JSON.parse(content.toString('utf8')) as { url: string }).url).origin;
  } catch {
    origin = undefined;
  }
  if (origin === undefined) return names.workQueue;
  if (isPaused(origin)) return names.pausedQueue;
  return names.workQueues[laneOf(laneBucket(origin), names.workQueues.length)] ?? names.workQueue;
}
