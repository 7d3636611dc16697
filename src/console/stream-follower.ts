import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { isNotFound } from '../amqp/broker-errors.js';
import { connectFirst, openChannel } from '../amqp/connect.js';
import type { Logger } from '../logger.js';

/** Where a read starts when it has no offset to resume at: the stream's first message, or a time. */
export type FollowStart = () => 'first' | Date;

export interface FollowOptions {
  urls: string[];
  queue: string;
  start: FollowStart;
  onMessage: (content: Buffer) => void;
  /** The read starts again from `start` (the stream was deleted or declared anew): forget what was read. */
  onRestart: () => void;
  logger: Logger;
  /** Wait before connecting again, and before checking again for a stream that does not exist. */
  retryMs?: number;
}

export interface StreamFollower {
  /** The stream was not found at the last look (P.history needs HISTORY=on on the workers). */
  readonly missing: boolean;
  /** The read has reached the messages stored after it began. */
  readonly caughtUp: boolean;
  close(): Promise<void>;
}

/** Messages the reader may hold unacked: a stream consumer must set a prefetch. */
const PREFETCH = 500;
/** After this long without a message the read counts as caught up. */
const QUIET_MS = 1_000;

/**
 * Follows a stream from `start`, on a connection of its own, until closed. After a lost connection it
 * resumes at the offset after the last message read (`x-stream-offset`), so nothing is counted twice;
 * after the broker cancelled the consumer (the stream deleted) it starts again from `start`.
 * A stream is read by a consumer with a prefetch and manual acks; reading removes nothing:
 * https://www.rabbitmq.com/docs/streams#consuming
 */
export function followStream(options: FollowOptions): StreamFollower {
  const retryMs = options.retryMs ?? 2_000;
  let next: number | undefined;
  let connection: ChannelModel | undefined;
  let closing = false;
  let missing = false;
  let caughtUp = false;
  let quiet: NodeJS.Timeout | undefined;
  let timer: NodeJS.Timeout | undefined;
  let wake: () => void = () => {};

  const settle = (): void => {
    clearTimeout(quiet);
    quiet = setTimeout(() => (caughtUp = true), QUIET_MS);
    quiet.unref();
  };

  const readOnce = async (): Promise<void> => {
    const opened = await connectFirst(options.urls);
    connection = opened.connection;
    if (closing) return void (await opened.connection.close().catch(() => {}));
    const ended = new Promise<void>((resolve) => {
      wake = resolve;
      opened.connection.on('close', () => resolve());
    });
    const probe = await openChannel(opened.connection);
    try {
      await probe.checkQueue(options.queue);
      missing = false;
      await probe.close().catch(() => {});
    } catch (error) {
      if (!isNotFound(error)) throw error;
      missing = true;
      await opened.connection.close().catch(() => {});
      return;
    }
    const channel: Channel = await openChannel(opened.connection);
    await channel.prefetch(PREFETCH);
    const from = next ?? options.start();
    const offset = from instanceof Date ? { '!': 'timestamp', value: Math.floor(from.getTime() / 1000) } : from;
    const begun = Date.now();
    await channel.consume(
      options.queue,
      (message: ConsumeMessage | null) => {
        if (message === null) {
          // Cancelled by the broker: the stream is gone or new, so offsets start over.
          next = undefined;
          options.onRestart();
          void opened.connection.close().catch(() => {});
          return;
        }
        channel.ack(message);
        const at = Number(message.properties.headers?.['x-stream-offset']);
        // A read resumed at an offset may start at the beginning of the chunk holding it.
        if (Number.isInteger(at) && next !== undefined && at < next) return;
        if (Number.isInteger(at)) next = at + 1;
        if (typeof message.properties.timestamp === 'number' && message.properties.timestamp * 1000 >= begun) caughtUp = true;
        options.onMessage(message.content);
        settle();
      },
      { noAck: false, arguments: { 'x-stream-offset': offset } },
    );
    settle();
    await ended;
  };

  const loop = async (): Promise<void> => {
    while (!closing) {
      try {
        await readOnce();
      } catch (error) {
        options.logger.warn({ err: (error as Error).message, stream: options.queue }, 'console: reading the stream failed; trying again');
      }
      if (closing) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        timer = setTimeout(resolve, missing ? retryMs * 5 : retryMs);
      });
    }
  };
  const running = loop();

  return {
    get missing() {
      return missing;
    },
    get caughtUp() {
      return caughtUp;
    },
    async close() {
      closing = true;
      clearTimeout(quiet);
      clearTimeout(timer);
      wake();
      await connection?.close().catch(() => {});
      await running;
    },
  };
}
