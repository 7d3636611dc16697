import type { ConfirmChannel, ConsumeMessage, Options } from 'amqplib';
import { isRelayError } from '../errors.js';
import type { Logger } from '../logger.js';
import { isClosed, publishConfirmed } from '../amqp/publish-confirmed.js';
import { HEADER, carriedHeaders, readAttempt } from '../message/headers.js';
import { MAX_RETURNS, MAX_RETURN_DELAY_MS, nextReturn } from '../policy/return-bound.js';
import { sleep } from '../util/with-timeout.js';
import { declareDueQueue } from '../topology/declare-topology.js';
import { dueDestination, type TopologyNames } from '../topology/topology-names.js';

/** What the mover needs of a connection: a confirm channel of its own. */
export interface ChannelSource {
  createConfirmChannel(): Promise<ConfirmChannel>;
}

export interface DueMover {
  /** (Re)starts moving on `connection`; called after every (re)connect. */
  attach(connection: ChannelSource): void;
  /** Stops moving: moves under way reach their ack (or stay unacked when not stored), then the channel closes. */
  close(): Promise<void>;
}

const RETRY_MS = 5_000;

/** After how long an unconfirmed move is logged; it is waited for all the same (a blocked connection). */
const SLOW_CONFIRM_MS = 10_000;

/**
 * Plugin mode: moves the messages whose delay has ended from P.due (see topology/declare-topology.ts) into
 * its lane. Each one is published to P with routing key `deliver.<bucket>` (an ordered one: `ordered.<bucket>`, into its shard) and no `x-delay`, so the exchange
 * routes it at once, and it is acked only once the broker confirmed the copy and did not return it:
 * a crash in between duplicates a message, never loses one. The copy is `mandatory` (the plugin
 * routes a message without a delay at publish time), so a lane or binding an operator deleted
 * returns it; the topology is then declared again (`redeclare`) before it is published once more. Nothing is parsed here, so no message can make it fail; a
 * lane that refuses it is bounded as `move` says.
 *
 * `prefetch` (DUE_PREFETCH) is how many moves are under way at once. On RabbitMQ 3.10 a due callback
 * waited about half of it ÷ the rate falling due (100 at 1,000 a second: 48 ms; 1,000: 494 ms), and
 * a wider window moved more a second when callbacks fell due faster than the worker delivered
 * (docs/delay-modes.md): a setting, not a constant.
 *
 * It runs on a confirm channel of its own: P.due is a classic queue on one node, and while that node
 * is down, declaring or consuming it fails. The worker goes on consuming P.work meanwhile, and the
 * mover tries again every few seconds.
 */
export function createDueMover(names: TopologyNames, prefetch: number, logger: Logger, redeclare?: () => Promise<void>): DueMover {
  let channel: ConfirmChannel | undefined;
  /** The newest connection: a retry always uses it, never one that has since gone. */
  let current: ChannelSource | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  /** Cuts a move's wait before it tries again short: the worker stops. */
  const closing = new AbortController();
  /** Moves under way: a stop lets each finish, so none is cut between its copy and its ack. */
  const moving = new Set<Promise<void>>();

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
        // While closing, a message is left unacked: the channel's close puts it back (P.due counts nothing).
        if (message && closed) return;
        if (message) {
          const moved = move(ch, message);
          moving.add(moved);
          return void moved.finally(() => moving.delete(moved));
        }
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

  /**
   * Publishes the message on into its lane, confirmed, then acks it. A negative confirm or a return (a
   * lane that refuses it, or none bound) is tried again in place, after declaring the topology again
   * when it was returned, the message held unacked, never requeued: P.due is a classic
   * queue, which counts no redeliveries, so a requeue would loop without end. The waits and their
   * number are the send-back bound (policy/return-bound.ts); past it the message is parked in P.dead
   * as `unsettled`, and while even that cannot be stored it is held and both are tried again.
   */
  async function move(ch: ConfirmChannel, message: ConsumeMessage): Promise<void> {
    // `due.<bucket>` goes on as `deliver.<bucket>`, into the message's own lane; `due.o<bucket>` as `ordered.<bucket>`, into its shard.
    const routingKey = dueDestination(names, message.fields.routingKey);
    const id = message.properties.messageId as unknown;
    const wait = {
      slowAfterMs: SLOW_CONFIRM_MS,
      onSlow: () => logger.warn({ id }, 'a due message is not confirmed yet (is the connection blocked by a broker alarm?); waiting'),
    };
    try {
      for (let tries = 0; ; tries += 1) {
        const step = nextReturn(tries % (MAX_RETURNS + 1));
        const lane = step.kind === 'return' || tries < MAX_RETURNS;
        const error = await publishConfirmed(
          ch,
          lane ? { exchange: names.exchange, routingKey } : { exchange: '', routingKey: names.deadQueue },
          message.content,
          lane ? publishOptions(message) : parkOptions(message),
          wait,
        ).then(
          () => undefined,
          (failure: unknown) => failure as Error,
        );
        if (!error) return ch.ack(message);
        // Not stored: a closing mover leaves it unacked, and its channel's close puts it back.
        if (isClosed(ch) || closed) return;
        logger.warn(
          { id, err: error.message, tries: tries + 1 },
          lane ? 'a due message was refused by its lane; trying again' : 'a due message could not be parked either; trying again',
        );
        if (isRelayError(error, 'CR_ERR_PUBLISH_RETURNED'))
          await redeclare?.().catch((failure: Error) => logger.warn({ err: failure.message }, 'could not declare the topology again'));
        await sleep(step.kind === 'return' ? step.delayMs : MAX_RETURN_DELAY_MS, closing.signal);
        if (closed) return;
      }
    } catch {
      // The channel closed: the broker has requeued the message for the next consumer.
    }
  }

  return {
    attach,
    async close() {
      closed = true;
      closing.abort();
      clearTimeout(retry);
      // A move whose copy may be stored must reach its ack: closing the channel first could requeue
      // the original beside its copy, and the callback would be delivered twice.
      await Promise.allSettled([...moving]);
      const last = channel;
      channel = undefined;
      await last?.close().catch(() => {});
    },
  };
}

/** A due message that its lane keeps refusing, parked in P.dead as `unsettled` (its attempt count unchanged). */
function parkOptions(message: ConsumeMessage): Options.Publish {
  const options = publishOptions(message);
  const attempts = readAttempt(message.properties.headers) - 1;
  return {
    ...options,
    headers: {
      ...options.headers,
      [HEADER.reason]: 'unsettled',
      [HEADER.attempts]: attempts,
      [HEADER.lastError]: 'its lane refused it, or no lane was bound for it',
    },
  };
}

/** The message's own properties, without the plugin's `x-delay` (already spent, now negative); mandatory. */
function publishOptions(message: ConsumeMessage): Options.Publish {
  const p = message.properties;
  return {
    mandatory: true,
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
