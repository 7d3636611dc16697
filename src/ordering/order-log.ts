import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, Message, Options } from 'amqplib';
import { isClientRefusal, isNotFound } from '../amqp/broker-errors.js';
import { RelayError } from '../errors.js';
import { withTimeout } from '../util/with-timeout.js';
import { LOG_TOKEN_HEADER, OFFSET_HEADER, storedHeaders, toEntry, toOffset, type LogEntry } from './log-entry.js';

/**
 * One shard's log on a RabbitMQ stream (P.ordered.log.<i>), over AMQP 0.9.1 with amqplib: records
 * are appended with publisher confirms and read back in offset order. It knows nothing of what the
 * records mean. Streams over AMQP 0.9.1: https://www.rabbitmq.com/docs/streams#consuming
 */

export interface OrderLogOptions {
  /** Deliveries a follow or a read may hold unacked (a stream consumer must set one). Default 200. */
  prefetch?: number;
  /** How long an append waits for its confirm: then `CR_ERR_PUBLISH_TIMEOUT`. Default 10 s. */
  publishTimeoutMs?: number;
  /** How long a read waits for a record at or after its offset: then `CR_ERR_LOG_READ_TIMEOUT`. Default 5 s. */
  readTimeoutMs?: number;
}

export interface OrderLog {
  /**
   * Appends one record and resolves once the broker confirmed it. Rejects with `CR_ERR_PUBLISH_RETURNED`
   * (the stream is gone), `CR_ERR_PUBLISH_NACKED`, `CR_ERR_PUBLISH_TIMEOUT` or `CR_ERR_CLOSED`.
   * Appends are published in call order on one channel, so concurrent ones are stored in call order;
   * one that failed may leave a gap before those after it.
   */
  append(headers: Record<string, unknown>, body?: Buffer, properties?: LogEntry['properties']): Promise<void>;
  /**
   * Reads from `from` ('first' or an offset) and keeps following new records; calls `onEntry` in
   * offset order, each once, none before `from`. Returns its stop function. `onEnd` hears once why a
   * follow ended other than by its stop or the log's close: `CR_ERR_CLOSED` (the broker cancelled the
   * consumer, e.g. the stream was deleted, or the channel closed), `CR_ERR_LOG_MISSING`, or what
   * `onEntry` threw (no later entry is passed on then). Rejects with `CR_ERR_LOG_MISSING` if the
   * stream does not exist.
   */
  follow(from: 'first' | number, onEntry: (entry: LogEntry) => void, onEnd?: (error: unknown) => void): Promise<() => Promise<void>>;
  /**
   * The record at `offset`, or `undefined` if there is none: retention removed it (the first record
   * delivered is a later one). Rejects with `CR_ERR_LOG_READ_TIMEOUT` when nothing at or after
   * `offset` arrives in time (an offset past the end), `CR_ERR_LOG_MISSING` or `CR_ERR_CLOSED`.
   */
  read(offset: number): Promise<LogEntry | undefined>;
  /** Stops every follow and read, and closes the append channel; appends then reject with `CR_ERR_CLOSED`. */
  close(): Promise<void>;
}

interface AppendChannel {
  channel: ConfirmChannel;
  returned: Set<string>;
  closed: boolean;
}

let tokens = 0;

/** Opens the log of `stream`, which must exist: else `CR_ERR_LOG_MISSING`. Its channels are its own, on `connection`. */
export async function openOrderLog(connection: ChannelModel, stream: string, options: OrderLogOptions = {}): Promise<OrderLog> {
  const prefetch = options.prefetch ?? 200;
  const publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
  const readTimeoutMs = options.readTimeoutMs ?? 5_000;
  const where = `order log stream "${stream}"`;
  const missing = (cause?: unknown, why = 'does not exist'): RelayError =>
    new RelayError('CR_ERR_LOG_MISSING', `the ${where} ${why}`, { cause });
  const closedError = (what: string, cause?: unknown): RelayError => new RelayError('CR_ERR_CLOSED', `${what} (${where})`, { cause });
  let closed = false;
  /** Stops of running follows and reads: the log's close ends them. */
  const running = new Set<() => Promise<void>>();

  const check = await connection.createChannel();
  check.on('error', () => {});
  try {
    await check.checkQueue(stream);
  } catch (error) {
    throw isNotFound(error) ? missing(error) : error;
  } finally {
    await check.close().catch(() => {});
  }

  /** A channel for a follow or a read, with why it closed (a 404: the stream is gone). */
  async function readChannel(onClose: (error: RelayError) => void): Promise<Channel> {
    const channel = await connection.createChannel().catch((error: unknown) => {
      throw isClientRefusal(error) ? closedError('the connection is closed', error) : error;
    });
    let failure: unknown;
    channel.on('error', (error: unknown) => (failure = error));
    channel.on('close', () => onClose(isNotFound(failure) ? missing(failure) : closedError('the channel closed', failure)));
    await channel.prefetch(prefetch);
    return channel;
  }

  /** The offset of a delivery; none: the queue is no stream, and the message goes back unread. */
  const offsetOf = (channel: Channel, message: ConsumeMessage): number | undefined => {
    const offset = toOffset(message.properties.headers?.[OFFSET_HEADER]);
    if (offset === undefined) channel.nack(message, false, true);
    else channel.ack(message);
    return offset;
  };
  const notAStream = (): RelayError => missing(undefined, 'is a queue, not a stream: its messages carry no offset');

  let appendChannel: Promise<AppendChannel> | undefined;
  const currentAppendChannel = (): Promise<AppendChannel> => {
    if (appendChannel) return appendChannel;
    const opening = connection.createConfirmChannel().then((channel) => {
      const state: AppendChannel = { channel, returned: new Set(), closed: false };
      channel.on('error', () => {});
      channel.on('return', (message: Message) => {
        const token = message.properties.headers?.[LOG_TOKEN_HEADER];
        if (typeof token === 'string') state.returned.add(token);
      });
      channel.on('close', () => {
        state.closed = true;
        if (appendChannel === opened) appendChannel = undefined;
      });
      return state;
    });
    appendChannel = opening.catch((error: unknown) => {
      if (appendChannel === opened) appendChannel = undefined;
      throw isClientRefusal(error) ? closedError('the connection is closed', error) : error;
    });
    const opened = appendChannel;
    return opened;
  };

  /** Publishes now (so appends keep their call order) and waits for the confirm. */
  async function publish(
    state: AppendChannel,
    token: string,
    headers: Record<string, unknown>,
    body: Buffer,
    properties: LogEntry['properties'],
  ) {
    if (state.closed) throw closedError('the append channel closed before the record was published');
    const publishOptions: Options.Publish = {
      ...properties,
      persistent: true,
      mandatory: true,
      headers: { ...storedHeaders(headers), [LOG_TOKEN_HEADER]: token },
    };
    try {
      const confirmed = new Promise<Error | null>((resolve, reject) => {
        try {
          state.channel.publish('', stream, body, publishOptions, (error) => resolve(error ?? null));
        } catch (error) {
          reject(error as Error);
        }
      });
      const timeout = () =>
        new RelayError('CR_ERR_PUBLISH_TIMEOUT', `no confirm from the broker within ${publishTimeoutMs} ms for the ${where}`);
      const nack = await withTimeout(confirmed, publishTimeoutMs, timeout).catch((error: unknown) => {
        if (!(error instanceof RelayError) && (state.closed || isClientRefusal(error)))
          throw closedError('the append channel closed before the broker confirmed the record', error);
        throw error;
      });
      // The broker sends basic.return before the confirm of the same message.
      if (state.returned.has(token))
        throw new RelayError('CR_ERR_PUBLISH_RETURNED', `the broker returned the record: the ${where} is gone`);
      if (nack)
        throw state.closed
          ? closedError('the append channel closed before the broker confirmed the record', nack)
          : new RelayError('CR_ERR_PUBLISH_NACKED', `the broker refused the record for the ${where} (negative confirm)`, { cause: nack });
    } finally {
      state.returned.delete(token);
    }
  }

  return {
    append(headers, body = Buffer.alloc(0), properties = {}) {
      if (closed) return Promise.reject(closedError('the order log is closed'));
      const token = `${process.pid}.${(tokens += 1)}`;
      // Callbacks of one promise run in the order they were added: publishes go out in call order.
      return currentAppendChannel().then((state) => publish(state, token, headers, body, properties));
    },

    async follow(from, onEntry, onEnd) {
      if (from !== 'first' && toOffset(from) === undefined) throw new RangeError(`follow: ${from} is not a stream offset`);
      if (closed) throw closedError('the order log is closed');
      let next = from === 'first' ? 0 : from;
      let started = false;
      let ended: RelayError | undefined;
      let stopped = false;
      let channel: Channel | undefined;
      // Declared before `end`: the channel can close while it is still being opened, before `stop` exists.
      let stop: (() => Promise<void>) | undefined;
      const end = (error: unknown): void => {
        if (stopped) return;
        stopped = true;
        if (stop) running.delete(stop);
        void channel?.close().catch(() => {});
        if (started) onEnd?.(error);
      };
      channel = await readChannel((error) => {
        ended ??= error;
        end(error);
      });
      const open = channel;
      const stopFollow = async (): Promise<void> => {
        if (stopped) return;
        stopped = true;
        running.delete(stopFollow);
        await open.close().catch(() => {});
      };
      stop = stopFollow;
      try {
        await open.consume(
          stream,
          (message) => {
            if (message === null) return end(closedError('the broker cancelled the follow (stream deleted, or its node gone)'));
            if (stopped) return;
            const offset = offsetOf(open, message);
            if (offset === undefined) return end(notAStream());
            // A consumer started at an offset may first get the earlier records of its chunk.
            if (offset < next) return;
            next = offset + 1;
            try {
              onEntry(toEntry(offset, message));
            } catch (error) {
              end(error);
            }
          },
          { noAck: false, arguments: { [OFFSET_HEADER]: from } },
        );
      } catch (error) {
        throw ended ?? error;
      }
      if (ended) throw ended;
      started = true;
      running.add(stopFollow);
      return stopFollow;
    },

    async read(offset) {
      if (toOffset(offset) === undefined) throw new RangeError(`read: ${offset} is not a stream offset`);
      if (closed) throw closedError('the order log is closed');
      let settle: (outcome: { entry: LogEntry | undefined } | { error: unknown }) => void = () => {};
      const outcome = new Promise<{ entry: LogEntry | undefined } | { error: unknown }>((resolve) => (settle = resolve));
      const channel = await readChannel((error) => settle({ error }));
      const stop = async (): Promise<void> => settle({ error: closedError('the order log closed during a read') });
      running.add(stop);
      const timer = setTimeout(
        () =>
          settle({
            error: new RelayError(
              'CR_ERR_LOG_READ_TIMEOUT',
              `no record at or after offset ${offset} of the ${where} arrived within ${readTimeoutMs} ms: the offset is past its end`,
            ),
          }),
        readTimeoutMs,
      );
      let done = false;
      channel
        .consume(
          stream,
          (message) => {
            if (message === null) return settle({ error: closedError('the broker cancelled the read (stream deleted, or its node gone)') });
            if (done) return;
            const at = offsetOf(channel, message);
            if (at === undefined) return settle({ error: notAStream() });
            if (at < offset) return;
            // The first record at or after the offset: it, or a later one when retention removed it.
            done = true;
            settle({ entry: at === offset ? toEntry(at, message) : undefined });
          },
          { noAck: false, arguments: { [OFFSET_HEADER]: offset } },
        )
        .catch(() => {});
      const result = await outcome;
      done = true;
      clearTimeout(timer);
      running.delete(stop);
      await channel.close().catch(() => {});
      if ('error' in result) throw result.error;
      return result.entry;
    },

    async close() {
      if (closed) return;
      closed = true;
      await Promise.all([...running].map((stop) => stop()));
      const state = await appendChannel?.catch(() => undefined);
      appendChannel = undefined;
      await state?.channel.close().catch(() => {});
    },
  };
}
