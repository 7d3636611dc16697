import { HEADER } from '../message/headers.js';
import { LEVEL_LEAD_MS } from '../topology/delay-levels.js';

/**
 * Queues mode, the last fraction of a second: the delay levels count whole seconds and let a message
 * out up to LEVEL_LEAD_MS + 1 s before it is due (delay-levels.ts), and a delay shorter than that goes
 * to its lane at once. The worker holds such a message in memory until its due time (HEADER.dueAt),
 * then hands it to the pipeline. Held, it is still unacked: it keeps its consumer-prefetch slot but
 * takes no delivery slot, and if the worker or its channel dies the broker returns it to its lane.
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
 * How long to hold a message with these headers, received at `nowMs`: until its due time, at most
 * MAX_HOLD_MS; 0 when it is due, has no due time, or the header is unreadable (bad input is never held).
 */
export function holdMs(headers: Record<string, unknown> | undefined, nowMs: number): number {
  const raw = headers?.[HEADER.dueAt];
  const dueAt = typeof raw === 'number' ? raw : typeof raw === 'bigint' ? Number(raw) : Number.NaN;
  if (!Number.isFinite(dueAt)) return 0;
  const wait = dueAt - nowMs;
  return wait >= MIN_HOLD_MS ? Math.min(wait, MAX_HOLD_MS) : 0;
}

/** The messages a worker holds, each with the timer that releases it, by the channel it came on. */
export interface DueHold<Channel> {
  /** Runs `release` once the message is due (at once when it is); nothing when its channel closes first. */
  hold(headers: Record<string, unknown> | undefined, channel: Channel, release: () => void): void;
  /** The channel closed: the broker has requeued its held messages, so none of them may be released. */
  channelClosed(channel: Channel): void;
  /**
   * The worker stops: release nothing more, and hold nothing new (closing the channel returns what
   * is held, and what arrives before it closes and is not due yet).
   */
  clear(): void;
  /** Messages held now. */
  readonly size: number;
}

/** Timers are plain setTimeout: at thousands of messages a second, one each is cheap. */
export function createDueHold<Channel extends object>(clock: () => number): DueHold<Channel> {
  const timers = new Map<Channel, Set<NodeJS.Timeout>>();
  let size = 0;
  let stopped = false;
  return {
    hold(headers, channel, release) {
      const wait = holdMs(headers, clock());
      if (wait === 0) return release();
      if (stopped) return;
      let held = timers.get(channel);
      if (!held) timers.set(channel, (held = new Set()));
      const own = held;
      size += 1;
      const timer = setTimeout(() => {
        own.delete(timer);
        size -= 1;
        release();
      }, wait);
      own.add(timer);
    },
    channelClosed(channel) {
      const held = timers.get(channel);
      timers.delete(channel);
      for (const timer of held ?? []) clearTimeout(timer);
      size -= held?.size ?? 0;
    },
    clear() {
      stopped = true;
      for (const [channel, held] of [...timers]) {
        timers.delete(channel);
        for (const timer of held) clearTimeout(timer);
        size -= held.size;
      }
    },
    get size() {
      return size;
    },
  };
}
