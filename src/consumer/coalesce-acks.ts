import type { Channel, Message } from 'amqplib';

/**
 * Acks of one consumer channel, gathered until the end of the event loop's turn and sent in as few
 * frames as delivery-tag order allows: the acks that extend the run of settled tags from the oldest
 * one go as a single `multiple` ack, the others one by one.
 *
 * Why: every ack frame is a settle command a quorum queue appends to its log, and RabbitMQ finds the
 * message an ack names by walking the channel's unacknowledged messages from the oldest
 * (https://github.com/rabbitmq/rabbitmq-server/issues/1511), so an ack at the head of that list is
 * the cheap one. A `multiple` ack settles every unacked tag up to its own
 * (https://www.rabbitmq.com/docs/confirms#consumer-acks-multiple-parameter); it is sent only where
 * every older tag is settled already, so it never settles a message the worker still holds.
 *
 * Nacks and rejects are sent at once, as before. An ack on a channel that is closed throws at once,
 * as amqplib's does; one whose channel closes before the turn ends is dropped (the broker requeues
 * the message, as it would have without the ack). The worker flushes before it closes its
 * connection on a stop, so a graceful stop loses no ack.
 */
export interface CoalescedAcks {
  /** Sends the acks gathered so far now. */
  flush(): void;
}

/** Tags settled out of order that are remembered at most; past it the channel acks one by one (a settle we did not see). */
const MAX_OUT_OF_ORDER = 100_000;

type Ack = (message: Message, allUpTo?: boolean) => void;
type Nack = (message: Message, allUpTo?: boolean, requeue?: boolean) => void;

/**
 * Replaces `channel`'s `ack`, `nack` and `reject` with the coalescing ones (on this instance only),
 * so every path that settles a message on it takes part. `isClosed` tells a closed channel at once;
 * `schedule` runs the turn's flush (setImmediate; a test passes its own).
 */
export function coalesceAcks(channel: Channel, isClosed: () => boolean, schedule: (flush: () => void) => void = setImmediate): CoalescedAcks {
  const ack: Ack = channel.ack.bind(channel);
  const nack: Nack = channel.nack.bind(channel);
  /** Every tag at or below it is settled. */
  let floor = 0;
  /** Settled tags above `floor`. */
  const above = new Set<number>();
  /** This turn's acks, not sent yet. */
  let gathered: Message[] = [];
  let scheduled = false;
  let oneByOne = false;

  function settled(tag: number): void {
    if (tag <= floor) return;
    above.add(tag);
    while (above.delete(floor + 1)) floor += 1;
    if (above.size > MAX_OUT_OF_ORDER) {
      oneByOne = true;
      above.clear();
    }
  }

  function settledUpTo(tag: number): void {
    if (tag <= floor) return;
    floor = tag;
    for (const t of above) if (t <= floor) above.delete(t);
    while (above.delete(floor + 1)) floor += 1;
  }

  function flush(): void {
    scheduled = false;
    if (gathered.length === 0) return;
    const batch = gathered;
    gathered = [];
    const before = floor;
    for (const message of batch) settled(message.fields.deliveryTag);
    // The newest of this turn's acks the advance of the floor covers: one `multiple` ack for all of them.
    let last: Message | undefined;
    for (const message of batch) {
      const tag = message.fields.deliveryTag;
      if (tag > before && tag <= floor && (last === undefined || tag > last.fields.deliveryTag)) last = message;
    }
    try {
      if (last) ack(last, true);
      for (const message of batch) if (message.fields.deliveryTag > floor) ack(message, false);
    } catch {
      // The channel closed meanwhile: the broker requeues what it had not been told of.
    }
  }

  channel.ack = (message: Message, allUpTo = false): void => {
    if (oneByOne || allUpTo || isClosed()) {
      if (allUpTo) flush();
      ack(message, allUpTo);
      if (allUpTo) settledUpTo(message.fields.deliveryTag);
      else settled(message.fields.deliveryTag);
      return;
    }
    gathered.push(message);
    if (!scheduled) {
      scheduled = true;
      schedule(flush);
    }
  };
  channel.nack = (message: Message, allUpTo = false, requeue = true): void => {
    if (allUpTo) flush();
    nack(message, allUpTo, requeue);
    if (allUpTo) settledUpTo(message.fields.deliveryTag);
    else settled(message.fields.deliveryTag);
  };
  channel.reject = (message: Message, requeue = true): void => channel.nack(message, false, requeue);
  return { flush };
}
