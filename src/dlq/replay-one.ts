import type { Message } from 'amqplib';
import { publishConfirmed } from '../amqp/publish-confirmed.js';
import { isValidId } from '../message/callback.js';
import { orderBucket, orderedRoutingKey, type TopologyNames } from '../topology/topology-names.js';
import type { DeadQueueSession } from './dead-queue-session.js';
import { replayPublishOptions } from './replay-publish-options.js';

/**
 * Where a replay goes: a callback with an `orderKey` into its key's shard (docs/ordering.md: a key
 * stopped at it runs it first, then moves on), any other to P with routing key `deliver`. The body is
 * only read for that key: one that is not a callback goes to `deliver`, and the worker parks it again.
 */
export function replayRoute(names: TopologyNames, content: Buffer): { exchange: string; routingKey: string } {
  let orderKey: unknown;
  try {
    orderKey = (JSON.parse(content.toString('utf8')) as { orderKey?: unknown } | null)?.orderKey;
  } catch {
    orderKey = undefined;
  }
  if (typeof orderKey === 'string' && isValidId(orderKey))
    return { exchange: names.exchange, routingKey: orderedRoutingKey(orderBucket(orderKey)) };
  return { exchange: names.exchange, routingKey: names.routingKey };
}

/**
 * Republishes one message of P.dead to exchange P with routing key `deliver` (an ordered one to its shard): a fresh callback with
 * the same id, stamped with the time of the replay (replay-publish-options.ts). Resolves once the
 * broker confirmed the copy, and only then may the caller ack the original. `mandatory` in queues
 * mode, where a copy nothing is bound for comes back instead of being dropped (replay-dead.ts).
 */
export async function replayOne(session: DeadQueueSession, message: Message, id: string | null, mandatory: boolean): Promise<void> {
  const { channel, names } = session;
  const options = { ...replayPublishOptions(message.properties, id, new Date().toISOString()), mandatory };
  // One publish at a time on this channel: a return is matched without a header of ours on the copy.
  await publishConfirmed(channel, replayRoute(names, message.content), message.content, options, session.publishTimeoutMs, 'serial');
}
