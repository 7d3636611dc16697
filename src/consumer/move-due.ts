import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import type { Logger } from '../logger.js';
import { carriedHeaders } from '../message/headers.js';
import { declareDueQueue } from '../topology/declare-due-queue.js';
import type { TopologyNames } from '../topology/topology-names.js';

/** What the mover needs of a connection: a confirm channel of its own. */
export interface ChannelSource {
  createConfirmChannel(): Promise<ConfirmChannel>;
}

export interface DueMover {
  /** (Re)starts moving on `connection`; called after every (re)connect. */
  attach(connection: ChannelSource): void;
  close(): Promise<void>;
}

const RETRY_MS = 5_000;

/**
 * Plugin mode: moves the messages whose delay has ended from P.due (see declare-due-queue.ts) into
 * its lane. Each one is published to P with routing key `deliver.<bucket>` and no `x-delay`, so the exchange
 * routes it at once, and it is acked only once the broker confirmed the copy: a crash in between
 * duplicates a message, never loses one. Nothing is parsed here, so no message can make it fail.
 *
 * It runs on a confirm channel of its own: P.due is a classic queue on one node, and while that node
 * is down, declaring or consuming it fails. The worker goes on consuming P.work meanwhile, and the
 * mover tries again every few seconds.
 */
export function createDueMover(names: TopologyNames, prefetch: number, logger: Logger): DueMover {
  let channel: ConfirmChannel | undefined;
  /** The newest connection: a retry always uses it, never one that has since gone. */
  let current: ChannelSource | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;

  async function start(connection: ChannelSource): Promise<void> {
    const ch = await connection.createConfirmChannel();
    channel = ch;
    ch.on('error', () => {});
    ch.on('close', () => {
      if (channel === ch) schedule();
    });
    await declareDueQueue(ch, names);
    await ch.prefetch(prefetch);
    await ch.consume(
      names.dueQueue,
      (message) => {
        if (message) return move(ch, message);
        // The broker cancelled the consumer (P.due deleted, its node gone): start over on a new channel.
        logger.warn({ queue: names.dueQueue }, 'the broker cancelled the P.due consumer; starting it again');
        void ch.close().catch(() => {});
      },
      { noAck: false },
    );
  }

  function schedule(): void {
    if (closed || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      if (current) attach(current);
    }, RETRY_MS);
  }

  function attach(connection: ChannelSource): void {
    if (closed) return;
    current = connection;
    clearTimeout(retry);
    retry = undefined;
    const previous = channel;
    channel = undefined;
    void previous?.close().catch(() => {});
    start(connection).catch((error: Error) => {
      logger.warn({ queue: names.dueQueue, err: error.message }, 'cannot move due messages yet; retrying');
      schedule();
    });
  }

  function move(ch: ConfirmChannel, message: ConsumeMessage): void {
    try {
      // `due.<bucket>` goes on as `deliver.<bucket>`, into the message's own lane.
      const bucket = message.fields.routingKey.split('.')[1];
      const routingKey = bucket === undefined ? names.routingKey : `${names.routingKey}.${bucket}`;
      ch.publish(names.exchange, routingKey, message.content, publishOptions(message), (error) => {
        // A nack leaves the message in P.due for the next try; a closed channel returns it anyway.
        // This callback can run inside amqplib's handling of the channel's close, where a throw would
        // stop the other close listeners: settle only what can still be settled.
        try {
          if (error) ch.nack(message, false, true);
          else ch.ack(message);
        } catch {
          // The channel closed: the broker has requeued the message.
        }
      });
    } catch {
      // The channel is closed: the broker requeues the unacked message for the next consumer.
    }
  }

  return {
    attach,
    async close() {
      closed = true;
      clearTimeout(retry);
      const last = channel;
      channel = undefined;
      await last?.close().catch(() => {});
    },
  };
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
