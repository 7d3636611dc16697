import type { ConfirmChannel, ConsumeMessage } from 'amqplib';
import { carriedHeaders } from '../message/headers.js';
import { publishCopy } from '../consumer/publish-copy.js';
import { laneBucket, laneOf } from '../topology/lanes.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** How long a message whose move failed stays unacked before it goes back to its queue: no hot loop. */
const REQUEUE_AFTER_FAILURE_MS = 1_000;

/**
 * Moves a consumed message to `queue` (through the default exchange, mandatory) and acks it once the
 * broker has confirmed the copy; otherwise it goes back to its own queue, a second later, so a missing
 * holding queue does not make the broker hand it straight back in a loop (`redeclare`, when given, is
 * asked to declare the topology again first). Either way it is always in a queue, or unacked on this
 * channel. The copy keeps the callback's headers, attempt count included (holding spends no attempt),
 * without what dead-lettering added.
 */
export async function moveTo(channel: ConfirmChannel, message: ConsumeMessage, queue: string, id: string, timeoutMs: number, redeclare?: () => Promise<void>): Promise<void> {
  const copy = { exchange: '', routingKey: queue, headers: carriedHeaders(message.properties.headers), mandatory: true };
  const result = await publishCopy(channel, copy, message, id, timeoutMs);
  if (!result.stored) {
    await Promise.all([redeclare?.().catch(() => {}), new Promise((resolve) => setTimeout(resolve, REQUEUE_AFTER_FAILURE_MS))]);
  }
  try {
    if (result.stored) channel.ack(message);
    else channel.nack(message, false, true);
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
