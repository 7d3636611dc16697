import type { Channel, Message } from 'amqplib';

/**
 * Acks of one consumer channel, gathered and sent in as few frames as delivery-tag order allows: the
 * acks older than every message still unsettled go as a single `multiple` ack, the others one by one.
 *
 * Why: every ack frame is a settle command a quorum queue appends to its log, and RabbitMQ finds the
 * message an ack names by walking the channel's unacknowledged messages from the oldest
 * (https://github.com/rabbitmq/rabbitmq-server/issues/1511), so an ack at the head of that list is
 * the cheap one. A `multiple` ack settles every unacked tag up to its own
 * (https://www.rabbitmq.com/docs/confirms#consumer-acks-multiple-parameter); it is sent only below
 * the oldest delivery not settled yet, so it never settles a message the worker still holds.
 *
 * Each ack frame costs the broker a settle command and a round of deliveries to refill the window, so
 * acks are gathered (`AckPace`): the first waits up to 20 ms for others, or until an eighth of the
 * consumer's window has gathered. Fair scheduling settles a lane's messages out of delivery-tag order,
 * so an ack above a message still unsettled waits up to 100 ms more for it (at most a quarter of the
 * window): most of them then leave inside the next `multiple` ack instead of one frame each; one held
 * longer goes alone. Gathered and held acks cost only their consumer-prefetch slots for those
 * milliseconds; a crash within them means a redelivery, which at-least-once allows.
 *
 * Nacks and rejects are sent at once, as before. An ack on a channel that is closed throws at once,
 * as amqplib's does; one whose channel closes before it is sent is dropped (the broker requeues
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

/** How long, and how many, acks are gathered before they are sent, and acks above an unsettled message wait for it (see above). */
export interface AckPace {
  /** The longest the first ack of a batch waits for others, ms; 0 sends each turn's acks at its end. */
  gatherMs: number;
  /** Acks gathered at most: at this count they go at the end of the turn. */
  gatherMax: number;
  /** The longest an ack above an unsettled message waits for it, ms; 0 sends it with its batch. */
  holdMs: number;
  /** Acks held at most; past it they all go at once, one by one. */
  holdMax: number;
  now: () => number;
  /** Runs `run` after `ms`; returns what cancels it. */
  after: (ms: number, run: () => void) => () => void;
}

/**
 * The pace for a consumer that may hold `window` unacked messages: gathered and held acks together
 * take at most a little over a third of it, so the broker keeps delivering while they wait.
 */
export function ackPaceFor(window: number): AckPace {
  return {
    gatherMs: 20,
    gatherMax: Math.max(1, Math.floor(window / 8)),
    holdMs: 100,
    holdMax: Math.max(1, Math.floor(window / 4)),
    now: () => performance.now(),
    after: (ms, run) => {
      const timer = setTimeout(run, ms);
      return () => clearTimeout(timer);
    },
  };
}

type Ack = (message: Message, allUpTo?: boolean) => void;
type Nack = (message: Message, allUpTo?: boolean, requeue?: boolean) => void;

/**
 * Replaces `channel`'s `ack`, `nack` and `reject` with the coalescing ones (on this instance only),
 * so every path that settles a message on it takes part. Every delivery must be told (`delivered`);
 * an ack of a tag never told turns the coalescing off for the channel. `isClosed` tells a closed
 * channel at once; `pace` says how long acks wait; `schedule` runs a turn's flush (setImmediate; a test passes its own).
 */
export function coalesceAcks(
  channel: Channel,
  isClosed: () => boolean,
  pace: AckPace,
  schedule: (flush: () => void) => void = setImmediate,
): CoalescedAcks {
  const ack: Ack = channel.ack.bind(channel);
  const nack: Nack = channel.nack.bind(channel);
  /**
   * Delivered and not settled, oldest first: tags arrive in increasing order and a Set iterates in
   * insertion order, so its first entry is the oldest. At most the consumer's prefetch.
   */
  const unsettled = new Set<number>();
  /** Acks gathered, not sent yet. */
  let gathered: Message[] = [];
  /** Acks above an unsettled message, waiting for it since `heldSince`; `cancelHold` ends their wait. */
  let held: Message[] = [];
  let heldSince = 0;
  let cancelHold: (() => void) | undefined;
  /** The first gathered ack's wait for others; `scheduled`: a flush at the end of this turn. */
  let cancelGather: (() => void) | undefined;
  let scheduled = false;
  let oneByOne = false;

  function settled(tag: number): void {
    if (!unsettled.delete(tag)) oneByOne = true;
  }

  /** Sends the multiple ack the gathered and held acks allow; the rest wait, unless `all` or their hold is over. */
  function flush(all = false): void {
    scheduled = false;
    cancelGather?.();
    cancelGather = undefined;
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
    const now = pace.now();
    if (heldSince === 0) heldSince = now;
    const wait = above.length === 0 || all || oneByOne || above.length > pace.holdMax ? 0 : pace.holdMs - (now - heldSince);
    try {
      if (last) ack(last, true);
      if (wait > 0) {
        held = above;
        cancelHold ??= pace.after(wait, () => {
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
    if (scheduled) return;
    if (pace.gatherMs > 0 && gathered.length < pace.gatherMax) {
      cancelGather ??= pace.after(pace.gatherMs, () => {
        cancelGather = undefined;
        flush();
      });
      return;
    }
    scheduled = true;
    schedule(flush);
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
