import type { Channel, Message } from 'amqplib';
import { LEVEL_LEAD_MS } from '../topology/delay-levels.js';

/**
 * Queues mode, the last fraction of a second: the delay levels count whole seconds and let a message
 * out up to LEVEL_LEAD_MS + 1 s before it is due (delay-levels.ts), and a delay shorter than that goes
 * to its lane at once. The worker holds such a message in memory until its due time (HEADER.dueAt,
 * read by decode.ts dueAtOf), then hands it to the pipeline. Held, it is still unacked: it keeps its
 * consumer-prefetch slot but takes no delivery slot. If its channel dies the broker returns it to its lane; a worker that stops
 * gives it back there itself, unattempted, once its consumers are cancelled (giveBackAll).
 */

/**
 * The longest a message is held. Due times are the publisher's clock: a clock ahead of the worker's
 * must not park a message for longer than the levels can make it early (1 s plus the lead), with room.
 */
export const MAX_HOLD_MS = 2 * (1_000 + LEVEL_LEAD_MS);

/**
 * Queues mode: each lane's consumer may hold this many unacknowledged messages on top of PREFETCH,
 * room for the messages held until due. At 1,000 due a second a worker holds about 600 (each up to
 * 1.25 s), spread unevenly over its lanes; without the room, held messages would take the prefetch
 * the lane's deliveries need. https://www.rabbitmq.com/docs/consumer-prefetch
 */
export const HOLD_PREFETCH = 400;

/** Below this a hold is not worth a timer: the message goes on at once. */
const MIN_HOLD_MS = 2;

/**
 * How long to hold a message due at `dueAt` (decode.ts dueAtOf), received at `nowMs`: until its due
 * time, at most MAX_HOLD_MS; 0 when it is due or has no due time (its header absent or unreadable).
 */
export function holdMs(dueAt: number | undefined, nowMs: number): number {
  if (dueAt === undefined) return 0;
  const wait = dueAt - nowMs;
  return wait >= MIN_HOLD_MS ? Math.min(wait, MAX_HOLD_MS) : 0;
}

/** The messages a worker holds, each with the timer that releases it, by the channel it came on. */
export interface DueHold<Channel> {
  /**
   * Runs `release` once the message is due (at once when it is); nothing when its channel closes first;
   * `giveBack` instead when the worker stops first (giveBackAll).
   */
  hold(dueAt: number | undefined, channel: Channel, release: () => void, giveBack: () => void): void;
  /** The channel closed: the broker has requeued its held messages, so none of them may be released or given back. */
  channelClosed(channel: Channel): void;
  /**
   * The worker stops and its consumers are cancelled: every held message goes back to its lane now,
   * unattempted, as the pipeline's waiting jobs do (pipeline.ts giveBackWaiting), so another worker
   * takes it when due instead of after the drain; so does any not yet due that comes after. Returns
   * how many went back.
   */
  giveBackAll(): number;
  /** Messages held now. */
  readonly size: number;
}

/** Timers are plain setTimeout: at thousands of messages a second, one each is cheap. */
export function createDueHold<Channel extends object>(clock: () => number): DueHold<Channel> {
  /** Per channel, each held message's timer and what gives it back. */
  const held = new Map<Channel, Map<NodeJS.Timeout, () => void>>();
  let size = 0;
  let givenBack = false;
  /** Forgets a channel's held messages, their timers cleared; returns them. */
  function forget(channel: Channel): Map<NodeJS.Timeout, () => void> {
    const own = held.get(channel) ?? new Map<NodeJS.Timeout, () => void>();
    held.delete(channel);
    for (const timer of own.keys()) clearTimeout(timer);
    size -= own.size;
    return own;
  }
  return {
    hold(dueAt, channel, release, giveBack) {
      const wait = holdMs(dueAt, clock());
      if (wait === 0) return release();
      if (givenBack) return giveBack();
      let own = held.get(channel);
      if (!own) held.set(channel, (own = new Map()));
      const timers = own;
      size += 1;
      const timer = setTimeout(() => {
        timers.delete(timer);
        size -= 1;
        release();
      }, wait);
      timers.set(timer, giveBack);
    },
    channelClosed(channel) {
      forget(channel);
    },
    giveBackAll() {
      givenBack = true;
      let count = 0;
      for (const channel of [...held.keys()]) {
        for (const giveBack of forget(channel).values()) {
          giveBack();
          count += 1;
        }
      }
      return count;
    },
    get size() {
      return size;
    },
  };
}

/**
 * A held message the stopping worker gives back, unattempted: nacked with requeue once its consumers
 * are cancelled, like the pipeline's waiting jobs (pipeline.ts giveBack, which says why it needs no
 * count of ours). A closed channel's held messages are never given back: the broker requeued them.
 */
export function giveBackHeld(channel: Pick<Channel, 'nack'>, message: Message): void {
  try {
    channel.nack(message, false, true);
  } catch {
    // The channel closed meanwhile: the broker has requeued the message.
  }
}
