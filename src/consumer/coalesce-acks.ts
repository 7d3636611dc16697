import type { Channel, Message } from 'amqplib';

/**
 * Acks of one consumer channel, gathered until the end of the event loop's turn and sent in as few
 * frames as delivery-tag order allows: the acks older than every message still unsettled go as a
 * single `multiple` ack, the others one by one.
 *
 * Why: every ack frame is a settle command a quorum queue appends to its log, and RabbitMQ finds the
 * message an ack names by walking the channel's unacknowledged messages from the oldest
 * (https://github.com/rabbitmq/rabbitmq-server/issues/1511), so an ack at the head of that list is
 * the cheap one. A `multiple` ack settles every unacked tag up to its own
 * (https://www.rabbitmq.com/docs/confirms#consumer-acks-multiple-parameter); it is sent only below
 * the oldest delivery not settled yet, so it never settles a message the worker still holds.
 *
 * Nacks and rejects are sent at once, as before. An ack on a channel that is closed throws at once,
 * as amqplib's does; one whose channel closes before the turn ends is dropped (the broker requeues
 * the message, as it would have without the ack). On a stop the worker flushes, then closes each
 * lane channel before its connection (lane-channels.ts close), so a graceful stop loses no ack.
 */
export interface CoalescedAcks {
  /** A message arrived on the channel: until it is settled, no `multiple` ack may reach its tag. */
  delivered(tag: number): void;
  /** Sends the acks gathered so far now. */
  flush(): void;
  /** Messages delivered on the channel and not settled yet: how full its consumer's prefetch window is. */
  unsettled(): number;
}

type Ack = (message: Message, allUpTo?: boolean) => void;
type Nack = (message: Message, allUpTo?: boolean, requeue?: boolean) => void;

/**
 * Replaces `channel`'s `ack`, `nack` and `reject` with the coalescing ones (on this instance only),
 * so every path that settles a message on it takes part. Every delivery must be told (`delivered`);
 * an ack of a tag never told turns the coalescing off for the channel. `isClosed` tells a closed
 * channel at once; `schedule` runs the turn's flush (setImmediate; a test passes its own).
 */
export function coalesceAcks(
  channel: Channel,
  isClosed: () => boolean,
  schedule: (flush: () => void) => void = setImmediate,
): CoalescedAcks {
  const ack: Ack = channel.ack.bind(channel);
  const nack: Nack = channel.nack.bind(channel);
  /**
   * Delivered and not settled, oldest first: tags arrive in increasing order and a Set iterates in
   * insertion order, so its first entry is the oldest. At most the consumer's prefetch.
   */
  const unsettled = new Set<number>();
  /** This turn's acks, not sent yet. */
  let gathered: Message[] = [];
  let scheduled = false;
  let oneByOne = false;

  function settled(tag: number): void {
    if (!unsettled.delete(tag)) oneByOne = true;
  }

  function flush(): void {
    scheduled = false;
    if (gathered.length === 0) return;
    const batch = gathered;
    gathered = [];
    const oldest = oneByOne ? 0 : (unsettled.values().next().value ?? Number.POSITIVE_INFINITY);
    // The newest ack older than every unsettled message: one `multiple` ack for all of them.
    let last: Message | undefined;
    for (const message of batch) {
      const tag = message.fields.deliveryTag;
      if (tag < oldest && (last === undefined || tag > last.fields.deliveryTag)) last = message;
    }
    try {
      if (last) ack(last, true);
      for (const message of batch) if (message.fields.deliveryTag > oldest) ack(message, false);
    } catch {
      // The channel closed meanwhile: the broker requeues what it had not been told of.
    }
  }

  channel.ack = (message: Message, allUpTo = false): void => {
    const tag = message.fields.deliveryTag;
    if (allUpTo) {
      flush();
      ack(message, true);
      for (const t of unsettled) if (t <= tag) unsettled.delete(t);
      return;
    }
    if (oneByOne || isClosed()) {
      ack(message, false);
      settled(tag);
      return;
    }
    settled(tag);
    gathered.push(message);
    if (!scheduled) {
      scheduled = true;
      schedule(flush);
    }
  };
  channel.nack = (message: Message, allUpTo = false, requeue = true): void => {
    const tag = message.fields.deliveryTag;
    if (allUpTo) flush();
    nack(message, allUpTo, requeue);
    if (!allUpTo) return settled(tag);
    for (const t of unsettled) if (t <= tag) unsettled.delete(t);
  };
  channel.reject = (message: Message, requeue = true): void => channel.nack(message, false, requeue);
  return { delivered: (tag) => void unsettled.add(tag), flush, unsettled: () => unsettled.size };
}
