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
 * An ack above a message still unsettled waits a little (`AckHold`, 5 ms by default) for that message:
 * fair scheduling settles a lane's messages out of delivery-tag order, and most of the acks held that
 * way leave inside the next `multiple` ack instead of one frame each. One held longer, or past the
 * hold's count, goes alone as before. Holding an ack costs only its consumer-prefetch slot for those
 * milliseconds; a crash within them means a redelivery, which at-least-once allows.
 *
 * Nacks and rejects are sent at once, as before. An ack on a channel that is closed throws at once,
 * as amqplib's does; one whose channel closes before the turn ends is dropped (the broker requeues
 * the message, as it would have without the ack). On a stop the worker flushes, then closes each
 * lane channel before its connection (lane-channels.ts close), so a graceful stop loses no ack.
 */
export interface CoalescedAcks {
  /** A message arrived on the channel: until it is settled, no `multiple` ack may reach its tag. */
  delivered(tag: number): void;
  /** Sends the acks gathered and held so far now. */
  flush(): void;
  /** Messages delivered on the channel and not settled yet: how full its consumer's prefetch window is. */
  unsettled(): number;
}

/** How long, and how many, acks above an unsettled message wait for it (see above). */
export interface AckHold {
  /** The longest an ack waits, ms; 0 sends it at the end of its turn. */
  ms: number;
  /** Acks waiting at most; past it they all go at once, one by one. */
  max: number;
  now: () => number;
  /** Runs `run` after `ms`; returns what cancels it. */
  after: (ms: number, run: () => void) => () => void;
}

/** 5 ms is a few turns of a busy worker's event loop; 32 is a third of a default lane window (PREFETCH 100). */
export const DEFAULT_ACK_HOLD: AckHold = {
  ms: 5,
  max: 32,
  now: () => performance.now(),
  after: (ms, run) => {
    const timer = setTimeout(run, ms);
    return () => clearTimeout(timer);
  },
};

type Ack = (message: Message, allUpTo?: boolean) => void;
type Nack = (message: Message, allUpTo?: boolean, requeue?: boolean) => void;

/**
 * Replaces `channel`'s `ack`, `nack` and `reject` with the coalescing ones (on this instance only),
 * so every path that settles a message on it takes part. Every delivery must be told (`delivered`);
 * an ack of a tag never told turns the coalescing off for the channel. `isClosed` tells a closed
 * channel at once; `schedule` runs the turn's flush (setImmediate; a test passes its own, and its own hold).
 */
export function coalesceAcks(
  channel: Channel,
  isClosed: () => boolean,
  schedule: (flush: () => void) => void = setImmediate,
  hold: AckHold = DEFAULT_ACK_HOLD,
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
  /** Acks above an unsettled message, waiting for it since `heldSince`; `cancelHold` ends their wait. */
  let held: Message[] = [];
  let heldSince = 0;
  let cancelHold: (() => void) | undefined;
  let scheduled = false;
  let oneByOne = false;

  function settled(tag: number): void {
    if (!unsettled.delete(tag)) oneByOne = true;
  }

  /** Sends the multiple ack the gathered and held acks allow; the rest wait, unless `all` or their hold is over. */
  function flush(all = false): void {
    scheduled = false;
    if (gathered.length === 0 && held.length === 0) return;
    const batch = held.length === 0 ? gathered : held.concat(gathered);
    gathered = [];
    held = [];
    const oldest = oneByOne ? 0 : (unsettled.values().next().value ?? Number.POSITIVE_INFINITY);
    // The newest ack older than every unsettled message: one `multiple` ack for all of them.
    let last: Message | undefined;
    const above: Message[] = [];
    for (const message of batch) {
      const tag = message.fields.deliveryTag;
      if (tag > oldest) above.push(message);
      else if (last === undefined || tag > last.fields.deliveryTag) last = message;
    }
    const now = hold.now();
    if (heldSince === 0) heldSince = now;
    const wait = above.length === 0 || all || oneByOne || above.length > hold.max ? 0 : hold.ms - (now - heldSince);
    try {
      if (last) ack(last, true);
      if (wait > 0) {
        held = above;
        cancelHold ??= hold.after(wait, () => {
          cancelHold = undefined;
          flush(true);
        });
        return;
      }
      for (const message of above) ack(message, false);
    } catch {
      // The channel closed meanwhile: the broker requeues what it had not been told of.
    }
    cancelHold?.();
    cancelHold = undefined;
    heldSince = 0;
  }

  channel.ack = (message: Message, allUpTo = false): void => {
    const tag = message.fields.deliveryTag;
    if (allUpTo) {
      flush(true);
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
    if (allUpTo) flush(true);
    nack(message, allUpTo, requeue);
    if (!allUpTo) return settled(tag);
    for (const t of unsettled) if (t <= tag) unsettled.delete(t);
  };
  channel.reject = (message: Message, requeue = true): void => channel.nack(message, false, requeue);
  return { delivered: (tag) => void unsettled.add(tag), flush: () => flush(true), unsettled: () => unsettled.size };
}
