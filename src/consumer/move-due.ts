import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { carriedHeaders } from '../message/headers.js';
import type { TopologyNames } from '../topology/topology-names.js';

/**
 * Plugin mode: moves the messages whose delay has ended from P.due (classic, where the plugin can
 * deliver safely at any time) into its lane (see declare-delivery-path.ts). Each one is published to P
 * with routing key `deliver.<bucket>` and no `x-delay`, so the exchange routes it at once, and it is acked only
 * once the broker confirmed the copy: a crash in between duplicates a message, never loses one. The
 * message is not parsed here, so nothing in it can make a worker fail while moving it.
 * Returns the consumer tag.
 */
export async function moveDue(channel: ConfirmChannel, names: TopologyNames, prefetch: number, onCancelled: () => void): Promise<string> {
  await channel.prefetch(prefetch);
  const { consumerTag } = await channel.consume(
    names.dueQueue,
    (message) => {
      // The broker cancelled the consumer: the worker recovers as for a lane's.
      if (message === null) return onCancelled();
      move(channel, names, message);
    },
    { noAck: false },
  );
  return consumerTag;
}

function move(channel: ConfirmChannel, names: TopologyNames, message: ConsumeMessage): void {
  try {
    // `due.<bucket>` goes on as `deliver.<bucket>`, into the message's own lane.
    const bucket = message.fields.routingKey.split('.')[1];
    const routingKey = bucket === undefined ? names.routingKey : `${names.routingKey}.${bucket}`;
    channel.publish(names.exchange, routingKey, message.content, publishOptions(message), (error) => {
      // A nack leaves the message in P.due for the next try; a closed channel returns it anyway.
      // This callback can run inside amqplib's handling of the channel's close, where a throw would
      // stop the other close listeners (the reconnect among them): settle only what can be settled.
      try {
        if (error) channel.nack(message, false, true);
        else channel.ack(message);
      } catch {
        // The channel closed: the broker has requeued the message.
      }
    });
  } catch {
    // The channel is closed: the broker requeues the unacked message for the next consumer.
  }
}

/** The message's own properties, without the plugin's `x-delay` (already spent, now negative). */
function publishOptions(message: ConsumeMessage): Options.Publish {
  const p = message.properties;
  return {
    headers: carriedHeaders(p.headers),
    persistent: p.deliveryMode === 2,
    contentType: p.contentType,
    contentEncoding: p.contentEncoding,
    messageId: p.messageId,
    timestamp: p.timestamp,
    correlationId: p.correlationId,
    type: p.type,
    appId: p.appId,
    priority: p.priority,
  };
}
