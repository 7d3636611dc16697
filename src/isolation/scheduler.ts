import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import { FairShare, type Started } from './fair-share.js';
import type { ScheduleLeft } from '../policy/retry-schedule.js';
import type { AttemptRange, HealthState, Transition } from './health.js';
import type { Backoff } from './target-limits.js';

/*
 * What the consumer asks of a scheduler, the scheduler of ISOLATION=off (arrival order), and how long
 * an attempt waits while its target's circuit is open. Target isolation, the scheduler of the
 * defaults, is target-isolation.ts (composing circuit.ts, busy-targets.ts and limit-gate.ts).
 */

/** How a started item is attempted: a normal attempt, or a probe of a target whose circuit is open. */
export type AttemptKind = 'attempt' | 'probe';

/** How an attempt ended, besides its outcome: reported overdue while it ran, and at which attempt number. */
export interface AttemptEnded {
  wasOverdue?: boolean;
  attempt?: number;
}

export interface Next<T> extends Started<T> {
  kind: AttemptKind;
}

/**
 * What a result changed: a health transition (one log line), and the items that were waiting for a
 * slot when the circuit opened (the consumer treats each like an offer answered `circuit-open`).
 */
export interface Effects<T> {
  transition: Transition | undefined;
  circuitOpen: T[];
  /** The receiver asked to slow down (429, 503 with Retry-After): the back-off to tell the other workers. */
  backoff?: Backoff | undefined;
}

/** Where a consumed item came from: a work lane, or the overflow queue (it never overflows twice). */
export type Source = 'lane' | 'overflow';

/** A waiting item as target isolation keeps it: how it will be attempted, when it was offered, and where it came from. */
export interface Waiting<T> {
  item: T;
  kind: AttemptKind;
  at: number;
  source: Source;
}

/**
 * What becomes of an offered item: it waits for a slot; its target's circuit is open and no probe is
 * free (the consumer defers it, see `circuitWait`); or its target is busy and its lane's window is over
 * its line (`Windows`), and it moves to the overflow queue, so that what is queued behind it in its
 * lane is not held up.
 */
export type Offered = 'queued' | 'circuit-open' | 'overflow';

/**
 * The consumer windows (one per lane: its consumer's prefetch) that items came in through. RabbitMQ
 * keeps FIFO order per queue, so what is queued behind a busy target's callbacks comes in only as
 * they leave the window: while the window has room it flows, and moving them would cost the broker a
 * publish and an ack each for nothing (https://www.rabbitmq.com/docs/consumer-prefetch).
 */
export interface Windows<T> {
  /** The window an item came in through. */
  of(item: T): string;
  /** How many items must leave `window` (beyond those leaving already) for what queues behind them to come in; 0 while it has room. */
  excess(window: string): number;
}

/** What the consumer asks of a scheduler: target isolation, or arrival order when isolation is off. */
export interface Scheduler<T> {
  offer(target: string, item: T, source: Source, nowMs: number): Offered;
  /**
   * An item deferred while its target's circuit was open, back while it still is: queued if it is owed
   * its real attempt (`circuitWait`) and its target has room within its share of slots, if `forced`, or
   * if it is the one request asking the target about its `attempt` number; else left to be deferred again.
   */
  offerOwed(
    target: string,
    item: T,
    source: Source,
    nowMs: number,
    wait: Pick<CircuitWait, 'owed' | 'forced' | 'mayBorrow'>,
    attempt?: number,
  ): 'queued' | 'circuit-open';
  /** `nowMs`: for limits; without it, the latest time the scheduler was given. */
  next(nowMs?: number): Next<T> | undefined;
  /** Waiting attempts held back by their limit for more than `boundMs`, with how long (absent when isolation is off: no limits). */
  outwaiting?(nowMs: number, boundMs: number, maxDelayMs: number): Array<{ item: T; delayMs: number }>;
  /** How long until a target held back by its limit may start again (undefined: none is waiting on time). */
  wakeInMs?(nowMs: number): number | undefined;
  /**
   * Whether `target`'s circuit is open, no request to it has succeeded since `sinceMs`, one failed at
   * `failedAfterMs` or later, and its latest request at each attempt number in `attempts` failed, as far
   * as this worker has seen it: false if it started watching after `sinceMs` (absent when isolation is off).
   */
  failedThroughout?(target: string, sinceMs: number, failedAfterMs: number, attempts: AttemptRange): boolean;
  /** Called once a running attempt passes `slowThresholdMs` (never when that is undefined); `attempt`: the callback's attempt number. */
  overdue(target: string, nowMs: number, kind: AttemptKind, attempt?: number): Effects<T>;
  /** An attempt ended: `ended.wasOverdue` if it was reported overdue; `ended.attempt`, the callback's attempt number. */
  complete(target: string, kind: AttemptKind, outcome: DeliveryOutcome, nowMs: number, ended?: AttemptEnded): Effects<T>;
  abandon(target: string, kind: AttemptKind): void;
  drop(matches: (item: T) => boolean): T[];
  /**
   * Waiting items of busy targets to move to the overflow queue now (called every few tens of ms).
   * `loopBusy`: the share of the time since the last sweep that the worker's event loop was busy (0–1).
   */
  sweep(nowMs: number, loopBusy?: number): T[];
  /** A move to the overflow queue took this long, publish to ack: what moving costs right now. */
  moveTook(durationMs: number): void;
  /** How full the windows items come in through are: a busy target's items move only out of one over its line (none given: always). */
  watchWindows?(windows: Windows<T>): void;
  readonly slowThresholdMs: number | undefined;
  /** Another worker's circuit transition, taken as this one's own (absent when isolation is off). */
  shareHealth?(target: string, state: HealthState, nowMs: number): Effects<T>;
}

/** No transition, nothing to hand back. */
export const NO_EFFECTS: Effects<never> = { transition: undefined, circuitOpen: [] };

/** The first wait of a deferred attempt; each next one doubles (1 s is the delay levels' unit). */
const FIRST_DEFER_MS = 1_000;
/** The shortest wait of a deferral cut short by the end of its schedule. */
const LAST_DEFER_MS = 100;
/**
 * Deferrals of one attempt at most, whatever the clocks say: a bound that is ours, not the broker's.
 * With the waits of `circuitWait` an attempt is forced about eight attempt timeouts after it came due.
 */
export const MAX_DEFERRALS = 16;

/**
 * What becomes of an attempt due while its target's circuit is open.
 * - `owed`: it has waited as long as a real attempt would have taken: its request is made now, if its
 *   target has room for it within its share of slots; not when that request would end after
 *   `giveUpAt`: it waits for that instead;
 * - `forced`: it was deferred `MAX_DEFERRALS` times: its request is made now, room or not;
 * - `mayBorrow`: it has been owed for an attempt timeout: it may take idle slots beyond its share;
 * - `expired`: its schedule's time is over (`giveUpAt`): a receiver that never answered would have had
 *   it dead-lettered by now with `ISOLATION=off`; if its target failed throughout (the pipeline asks
 *   `failedThroughout`), it is;
 * - `defer`: otherwise (or when there is no room), the deferral that stores it again: until it is owed,
 *   as above; then for as long as it has been owed (1 s at least, an attempt timeout at most), so it
 *   is looked at again soon after the circuit closes in a short outage, and seldom in a long one;
 *   never past `giveUpAt`.
 */
export interface CircuitWait {
  owed: boolean;
  expired: boolean;
  /** When its schedule would have ended with every attempt timing out, less what circuits held it: `heldSince` + `leftMs` − `heldMs`. */
  giveUpAt: number;
  forced: boolean;
  /**
   * Owed for an attempt timeout already (its target had no room then): it may borrow idle slots. Not
   * at once: in a short outage the first owed requests would only fail, where the circuit closing a
   * moment later serves them.
   */
  mayBorrow: boolean;
  defer: { delayMs: number; heldSince: number; deferrals: number };
}

export type { ScheduleLeft };

/**
 * An attempt that comes due while its target's circuit is open is deferred (its attempt number kept)
 * and looked at again after 1 s, 2 s, 4 s …, so it is attempted within that wait of the circuit
 * closing. Once it has waited `attemptTimeoutMs` since it first came due (`heldSince`), the circuit
 * still open, it is owed its request: what `ISOLATION=off` would have sent by then. It is never spent
 * without a request: whether a receiver answers depends on the callback too (a retry that finds its
 * work done answers at once where the first attempt hung), so only a real attempt may count; but its
 * schedule keeps its time: past its end with every attempt timing out (`schedule`: what is left of it,
 * made shorter by what circuits held it before), `ISOLATION=off` would have dead-lettered it if its
 * receiver never answered, so the circuit may not keep it longer (`expired`). Holds are what make
 * the end sooner, not the clock: a callback that waited for a broker's restart or a worker's crash
 * waited under `ISOLATION=off` too.
 * Pure: `heldSince`, `deferrals` and `heldMs` travel in the message's headers.
 */
export function circuitWait(
  heldSince: number | undefined,
  deferrals: number,
  nowMs: number,
  attemptTimeoutMs: number,
  schedule: ScheduleLeft = { leftMs: Number.POSITIVE_INFINITY, heldMs: 0 },
): CircuitWait {
  const since = heldSince !== undefined && heldSince <= nowMs ? heldSince : nowMs;
  const giveUpAt = since + schedule.leftMs - schedule.heldMs;
  const left = since + attemptTimeoutMs - nowMs;
  const doubled = FIRST_DEFER_MS * 2 ** Math.min(deferrals, 20);
  const wait = Math.max(FIRST_DEFER_MS, left > 0 ? Math.min(doubled, left) : Math.min(-left, attemptTimeoutMs));
  const expired = nowMs >= giveUpAt;
  // A request made now would end after the schedule's end: it waits for the end instead, when what its
  // target did meanwhile decides (dead-lettered, or owed its request after all).
  const tooLate = !expired && nowMs + attemptTimeoutMs > giveUpAt;
  // Back by the end of its schedule: that is when it may be dead-lettered, not a deferral later.
  const delayMs = expired ? wait : Math.max(LAST_DEFER_MS, Math.min(wait, giveUpAt - nowMs));
  const forced = deferrals >= MAX_DEFERRALS;
  return {
    owed: (left <= 0 && !tooLate) || forced,
    forced,
    mayBorrow: left <= -attemptTimeoutMs,
    expired,
    giveUpAt,
    defer: { delayMs, heldSince: since, deferrals: deferrals + 1 },
  };
}

/**
 * ISOLATION=off: one FIFO for every target with `capacity` slots, no health and no circuit; messages
 * are attempted in the order they arrived.
 */
export class ArrivalOrder<T> implements Scheduler<T> {
  private readonly fifo: FairShare<T>;
  readonly slowThresholdMs = undefined;

  constructor(capacity: number) {
    this.fifo = new FairShare<T>({ capacity, perTarget: capacity, initialPerTarget: capacity, maxTargets: 1 });
  }

  offer(_target: string, item: T): 'queued' {
    this.fifo.push('', item);
    return 'queued';
  }

  offerOwed(target: string, item: T): 'queued' {
    return this.offer(target, item);
  }

  sweep(): T[] {
    return [];
  }

  moveTook(): void {}

  next(): Next<T> | undefined {
    const started = this.fifo.next();
    return started && { ...started, kind: 'attempt' };
  }

  overdue(): Effects<T> {
    return NO_EFFECTS;
  }

  complete(): Effects<T> {
    this.fifo.done('', 'none');
    return NO_EFFECTS;
  }

  abandon(): void {
    this.fifo.done('', 'none');
  }

  drop(matches: (item: T) => boolean): T[] {
    return this.fifo.drop(matches).map(({ item }) => item);
  }
}
