import type { ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import { isClosed } from '../amqp/publish-confirmed.js';
import { withTimeout } from '../util/with-timeout.js';
import type { Logger } from '../logger.js';
import { ackPaceFor, coalesceAcks, type CoalescedAcks } from './coalesce-acks.js';
import type { Lane } from './pipeline.js';

/**
 * Each consumed queue (every work lane, and P.slow) on a confirm channel of its own.
 *
 * Why not one channel for all: RabbitMQ finds the message a `basic.ack` names by walking the
 * channel's unacknowledged messages from the oldest until it meets the delivery tag
 * (https://github.com/rabbitmq/rabbitmq-server/issues/1511, closed as won't fix), so an ack that
 * skips ahead of older unacked messages costs the broker the length of that walk. Fair scheduling
 * acks out of order by design (a quiet target's callback is settled before a busy one's that came
 * first), and queues mode holds messages until due, unacked, ahead of the rest. With every lane on
 * one channel the walk covered every lane's unacked messages, and the channel's process and the
 * broker spent many times the work per callback with isolation on than with `ISOLATION=off`
 * (docs/isolation.md). One channel per queue keeps each walk within one lane, and
 * each channel's acks leave in runs from its oldest unacked message where they can (coalesce-acks.ts).
 *
 * The channels are opened on the connection the topology was declared on, after it was declared,
 * each time the worker's setup runs (every reconnect); those of an earlier setup are closed first.
 * A lane whose channel closes alone (a channel error; a 404 if its queue was deleted meanwhile) or
 * cannot be opened is opened again after REOPEN_AFTER_MS, the topology declared again first, while
 * its connection lives; when the connection goes they all go, and the next setup opens them anew.
 */
export interface LaneChannels {
  /**
   * Opens a channel per queue on `connection` and consumes the queue on it, `prefetch` unacked
   * messages at most, or the queue's own (basic.qos per consumer: https://www.rabbitmq.com/docs/consumer-prefetch).
   */
  open(
    connection: ChannelModel,
    queues: ReadonlyArray<readonly [queue: string, lane: Lane, prefetch?: number]>,
    prefetch: number,
  ): Promise<void>;
  /**
   * Cancels every consumer but those `closeOnStop` names, so nothing more arrives (the worker's stop);
   * the channels stay open to settle. Of those it names, closes the ones holding no message (a shard
   * this worker only stands by for): the broker must not make a stopping worker its active consumer.
   */
  cancel(): Promise<void>;
  /** Every queue of the latest `open()` has its consumer (what readiness needs besides the connection). */
  consuming(): boolean;
  /** Sends the acks each channel gathered and holds now (coalesce-acks.ts). */
  flushAcks(): void;
  /**
   * The worker's stop, before it closes the connection: sends the gathered acks, then closes every
   * channel and waits for the broker's close-ok. amqplib writes each channel's frames from a buffer
   * of its own and drops what is still in it when the connection closes
   * (https://github.com/amqp-node/amqplib/issues/143), so without this the last acks and give-backs of
   * a loaded worker could be lost, and their callbacks delivered again by another worker. A channel
   * closes only after every frame sent on it before, and the broker handles them in order.
   */
  close(): Promise<void>;
  /** Messages of `lane` delivered and not settled yet, of the `prefetch` its consumer may hold (0 while it has none). */
  unsettled(lane: Lane): number;
}

export interface LaneChannelOptions {
  onMessage(message: ConsumeMessage | null, channel: ConfirmChannel, lane: Lane): void;
  /** A channel closed: the broker has requeued its unacked messages. */
  closed(channel: ConfirmChannel): void;
  /** Declares the topology again (topology/connect-topology.ts), before a lane is opened again. */
  redeclare(): Promise<void>;
  stopping(): boolean;
  /**
   * Lanes a stop never cancels, only closes (ordered shards): a single active consumer's successor gets
   * the queue's next messages as soon as it cancels, while it still holds unacked ones; a channel's close
   * returns those first, in order (https://www.rabbitmq.com/docs/consumers#single-active-consumer).
   */
  closeOnStop(lane: Lane): boolean;
  logger: Logger;
}

/** How long a lane whose channel closed alone waits before it is opened again. */
const REOPEN_AFTER_MS = 500;

/** How long close() waits for the broker's close-ok of the lane channels. */
const CLOSE_WAIT_MS = 5_000;

export function createLaneChannels(options: LaneChannelOptions): LaneChannels {
  const { logger } = options;
  /** The consumers of the latest setup: its lanes' channels and consumer tags. */
  let consumers = new Map<Lane, { channel: ConfirmChannel; tag: string; acks: CoalescedAcks }>();
  /** Counts the setups; a reopen of an earlier one's lane is dropped. */
  let generation = 0;
  /** Queues the latest setup consumes. */
  let expected = 0;
  /** Lanes waiting to be opened again, and the setup each belongs to. */
  const reopening = new Map<Lane, number>();

  async function consume(
    connection: ChannelModel,
    queue: string,
    lane: Lane,
    prefetch: number,
    mine: number,
    alive: () => boolean,
  ): Promise<void> {
    let channel: ConfirmChannel;
    try {
      channel = await connection.createConfirmChannel();
    } catch (error) {
      reopenLater(connection, queue, lane, prefetch, mine, alive);
      throw error;
    }
    // Acks leave gathered, in delivery-tag runs (coalesce-acks.ts).
    const acks = coalesceAcks(channel, () => isClosed(channel), ackPaceFor(prefetch));
    // Without a listener an 'error' event would throw; the close that follows is what counts.
    channel.on('error', (error: Error) => logger.warn({ lane, err: error.message }, 'a lane channel failed'));
    channel.once('close', () => {
      options.closed(channel);
      if (consumers.get(lane)?.channel === channel) consumers.delete(lane);
      reopenLater(connection, queue, lane, prefetch, mine, alive);
    });
    await channel.prefetch(prefetch);
    const { consumerTag } = await channel.consume(
      queue,
      (message) => {
        if (message) acks.delivered(message.fields.deliveryTag);
        options.onMessage(message, channel, lane);
      },
      { noAck: false },
    );
    consumers.set(lane, { channel, tag: consumerTag, acks });
    // The worker's stop began while this consumer was being registered: cancel() has been and gone.
    if (options.stopping()) await (options.closeOnStop(lane) ? channel.close() : channel.cancel(consumerTag)).catch(() => {});
  }

  function reopenLater(connection: ChannelModel, queue: string, lane: Lane, prefetch: number, mine: number, alive: () => boolean): void {
    const current = (): boolean => mine === generation && alive() && !options.stopping();
    // One reopen per lane at a time: the close of the channel a failed reopen opened is the same event.
    if (!current() || reopening.get(lane) === mine) return;
    reopening.set(lane, mine);
    const done = (): void => {
      if (reopening.get(lane) === mine) reopening.delete(lane);
    };
    setTimeout(() => {
      if (!current()) return done();
      options
        .redeclare()
        .then(() => (current() ? consume(connection, queue, lane, prefetch, mine, alive) : undefined))
        .then(done, (error: Error) => {
          logger.warn({ lane, err: error.message }, 'could not consume a lane again yet');
          done();
          reopenLater(connection, queue, lane, prefetch, mine, alive);
        });
    }, REOPEN_AFTER_MS).unref();
  }

  return {
    async open(connection, queues, prefetch) {
      generation += 1;
      const mine = generation;
      const earlier = consumers;
      consumers = new Map();
      // The setup ran again on a connection that still lives (its own channel closed alone).
      await Promise.all([...earlier.values()].map(({ channel }) => channel.close().catch(() => {})));
      let open = true;
      connection.once('close', () => (open = false));
      expected = queues.length;
      // All at once: a quorum queue registers a consumer through its log, behind what the queue is busy
      // with (a sibling's moves into P.slow, say), and one after another a worker's start added up those
      // waits. A lane that fails here is opened again later (reopenLater): the others are consumed
      // meanwhile.
      await Promise.all(
        queues.map(([queue, lane, own]) =>
          consume(connection, queue, lane, own ?? prefetch, mine, () => open).catch((error: Error) =>
            logger.warn({ lane, err: error.message }, 'could not consume a lane; trying again shortly'),
          ),
        ),
      );
    },
    async cancel() {
      for (const [lane, { channel, tag, acks }] of consumers) {
        if (!options.closeOnStop(lane)) await channel.cancel(tag).catch(() => {});
        else if (acks.unsettled() === 0) await channel.close().catch(() => {});
      }
    },
    consuming: () => expected > 0 && consumers.size === expected,
    flushAcks() {
      for (const { acks } of consumers.values()) acks.flush();
    },
    async close() {
      const open = [...consumers.values()];
      for (const { acks } of open) acks.flush();
      // Bounded: a broker that never answers must not hold the stop; the connection's close follows anyway.
      const closing = Promise.all(open.map(({ channel }) => channel.close().catch(() => {})));
      await withTimeout(closing, CLOSE_WAIT_MS, () => new Error('lane channels did not close')).catch(() =>
        logger.warn('the lane channels did not close in time; closing the connection'),
      );
    },
    unsettled: (lane) => consumers.get(lane)?.acks.unsettled() ?? 0,
  };
}
