import { AttemptPace } from './attempt-pace.js';
import type { FairShare, FairSharePolicy } from './fair-share.js';
import type { Waiting, Windows } from './scheduler.js';

export interface BusyPolicy extends FairSharePolicy {
  /**
   * A target whose oldest waiting message has waited this long while it holds at least its initial
   * share of slots is busy: its waiting messages from the lanes leave for the overflow queue.
   */
  overflowAfterMs: number;
}

/** What busy-target detection asks of the scheduler that owns it. */
export interface BusyContext {
  /** Held back by an operator's limit or a receiver's back-off (limit-gate.ts). */
  limited(target: string): boolean;
  /** Its circuit is open (circuit.ts): its waiting items are probes and owed requests, never moved. */
  degraded(target: string): boolean;
  /** The latest time the scheduler was given. */
  latestMs(): number;
}

/**
 * Busy targets and their overflow. A target that keeps messages waiting while it holds its share of
 * slots, and whose attempts take much longer than a move, is busy: its waiting messages from the lanes
 * move to the overflow queue (once each), so what is queued behind them in their lane, other targets'
 * callbacks, is reached at once. A target that waits because others hold the slots is not busy: it is
 * the one that others must not hold up. Whether a move is worth it, and whether the machine rather
 * than the receiver sets a target's pace, is attempt-pace.ts's; why: docs/isolation.md.
 * Deterministic: times are inputs.
 */
export class BusyTargets<T> {
  /** Busy targets and until when they stay busy without a new sign of it. */
  private readonly busy = new Map<string, number>();
  /**
   * Per target with attempts in flight: its last sign of life, the latest of its first start since it
   * had none running and its last attempt to end (`stuckAtLimit`).
   */
  private readonly lastSign = new Map<string, number>();
  /** A target holding this many slots is among those that hold the most (worked out by each sweep). */
  private busyLine = Number.POSITIVE_INFINITY;
  private readonly pace: AttemptPace;
  /** How full the lanes' consumer windows are (none: every busy target's item from a lane moves). */
  private windows: Windows<T> | undefined;

  constructor(
    private readonly policy: BusyPolicy,
    private readonly share: FairShare<Waiting<T>>,
    private readonly context: BusyContext,
  ) {
    this.pace = new AttemptPace(policy.maxTargets);
  }

  /** Whether `item`, offered from a lane, moves to the overflow queue at once: its target is busy, and its window lets it leave (a limited target's always). */
  overflows(target: string, item: T, nowMs: number): boolean {
    // Nothing found busy lately (the common case): no per-item work beyond this lookup.
    if (this.busy.size === 0 || !this.isBusy(target, nowMs)) return false;
    return this.context.limited(target) || mayLeaveWindow(this.windows, item);
  }

  /** An attempt of `target` started: the first since it had none running is its sign of life. */
  started(target: string, nowMs: number): void {
    if (!this.lastSign.has(target)) this.lastSign.set(target, nowMs);
  }

  /** An attempt of `target` ended (its slot already freed) after `durationMs`. */
  ended(target: string, nowMs: number, durationMs: number): void {
    if (this.share.inFlight(target) === 0) this.lastSign.delete(target);
    else this.lastSign.set(target, nowMs);
    this.pace.attemptTook(target, durationMs);
  }

  /** A started item of `target` was not attempted after all (its slot already freed). */
  abandoned(target: string): void {
    if (this.share.inFlight(target) === 0) this.lastSign.delete(target);
  }

  moveTook(durationMs: number): void {
    this.pace.moveTook(durationMs);
  }

  watchWindows(windows: Windows<T>): void {
    this.windows = windows;
  }

  /**
   * Finds the busy targets: one whose oldest waiting item has waited `overflowAfterMs` although it
   * is among those holding the most slots, or is stuck at its own limit (none of its attempts ended
   * meanwhile). Its waiting items from a lane whose window is over its line (`Windows`) are returned to
   * be moved to the overflow queue, as many as the window's excess; a limited target's, whatever its
   * window. One found busy whose receiver is slow by itself stays so while its callbacks wait, slots
   * or not (`stillBusy`). Then names the backlogs that keep slots (`backlogsKept`).
   */
  sweep(nowMs: number, loopBusy: number): T[] {
    this.pace.sampleLoop(loopBusy);
    const moved: T[] = [];
    for (const [target, until] of this.busy) if (until <= nowMs) this.busy.delete(target);
    const waiting = [...this.share.waitingTargets()];
    const mayLeave = windowBudget(this.windows);
    // Max-min fairness caps those that hold the most: half the largest holding among the waiting is the line.
    let most = 0;
    for (const target of waiting) most = Math.max(most, this.share.inFlight(target));
    this.busyLine = Math.max(Math.min(this.policy.initialPerTarget, this.policy.capacity), Math.ceil(most / 2));
    for (const target of waiting) {
      const oldest = this.share.head(target);
      if (!oldest || nowMs - oldest.at < this.policy.overflowAfterMs) continue;
      // Waiting for its limit is reason enough: those callbacks would hold their lane for nothing.
      if (!this.share.isHeld(target) && (!(this.holdsShare(target) || this.stillBusy(target, nowMs)) || !this.worthMoving(target)))
        continue;
      this.busy.delete(target);
      this.busy.set(target, nowMs + BUSY_FOR * this.policy.overflowAfterMs);
      // The newest leave first: the oldest are attempted from here as soon as the busy target has a slot.
      const limited = this.context.limited(target);
      for (const item of this.share.takeWaiting(
        target,
        (w) => w.source === 'lane' && w.kind === 'attempt' && (limited || mayLeave(w.item)),
        true,
      ))
        moved.push(item.item);
    }
    this.share.keep(this.backlogsKept());
    return moved;
  }

  /**
   * The targets that keep up to half the worker's slots between them (FairShare.keep): each with a
   * backlog here (half the worker's slots waiting, or more) whose pace the machine sets
   * (`AttemptPace.pacedByMachine`). Then the other targets' attempts wait for the worker's CPU as much
   * as for slots, and max-min by slots would give each of a flood of new targets a slot before the
   * backlog's next one, for no gain to them (docs/isolation.md#3-overflow-a-busy-targets-excess-leaves-its-lane). A receiver slower than the
   * machine by itself is not kept: half the slots would halve a flood's pace.
   */
  private backlogsKept(): Set<string> {
    const kept = new Set<string>();
    for (const target of this.share.waitingTargets()) {
      if (this.share.waiting(target) * 2 < this.policy.capacity || this.context.limited(target) || this.context.degraded(target)) continue;
      if (this.pace.pacedByMachine(target)) kept.add(target);
    }
    return kept;
  }

  /** Found busy within the last BUSY_FOR × `overflowAfterMs`. */
  private foundBusy(target: string, nowMs: number): boolean {
    const until = this.busy.get(target);
    return until !== undefined && until > nowMs;
  }

  /**
   * Found busy, and slow by itself (`AttemptPace.slowByItself`): such a target stays busy while its
   * callbacks wait, even once others take its slots, so the quiet targets queued behind it in its own
   * lane are not held up until a flood in the other lanes is served. Not so equal targets through a
   * loaded worker: each waits for the others there, and kept busy their backlogs would move for nothing.
   */
  private stillBusy(target: string, nowMs: number): boolean {
    return this.foundBusy(target, nowMs) && this.pace.slowByItself(target);
  }

  /** Busy, and holding its share, or still busy with callbacks waiting: its callbacks offered from a lane leave it (as its window allows). */
  private isBusy(target: string, nowMs: number): boolean {
    if (!this.foundBusy(target, nowMs)) return false;
    return this.context.limited(target) || this.holdsShare(target) || (this.share.waiting(target) > 0 && this.stillBusy(target, nowMs));
  }

  /**
   * Among those that hold the most slots (at least half the largest holding of a target with work
   * waiting, and its initial share), or stuck at its own limit without any attempt ending lately (it
   * hangs). Many quiet targets that each wait for a slot or two are not busy: the busy one holds them up.
   */
  private holdsShare(target: string): boolean {
    const inFlight = this.share.inFlight(target);
    return (inFlight > 0 && inFlight >= this.busyLine) || this.stuckAtLimit(target);
  }

  /**
   * Holds all its limit allows, and none of its attempts ended for `overflowAfterMs` while it had some
   * running: it hangs. In a saturated worker HANG_SATURATED times as long, since there even instant
   * answers take long while a pre-filled queue starts (docs/isolation.md#3-overflow-a-busy-targets-excess-leaves-its-lane).
   */
  private stuckAtLimit(target: string): boolean {
    const inFlight = this.share.inFlight(target);
    if (inFlight === 0 || inFlight < this.share.limit(target)) return false;
    const latestMs = this.context.latestMs();
    const quietMs = latestMs - (this.lastSign.get(target) ?? latestMs);
    return quietMs >= (this.pace.saturated() ? HANG_SATURATED : 1) * this.policy.overflowAfterMs;
  }

  /** One that hangs is always worth moving; else as its pace says. */
  private worthMoving(target: string): boolean {
    return this.stuckAtLimit(target) || this.pace.worthMoving(target);
  }
}

/**
 * How many of busy targets' waiting items may leave each lane window: its excess over its line,
 * counted down as items are let go (a fresh budget per sweep). While a window has room, what
 * queues behind a busy target's callbacks comes in anyway and is served first (fewest in flight);
 * moving them would only cost the broker a publish and an ack each. Without watched windows every
 * item may leave.
 */
function windowBudget<T>(windows: Windows<T> | undefined): (item: T) => boolean {
  if (windows === undefined) return () => true;
  let left: Map<string, number> | undefined;
  return (item) => {
    const window = windows.of(item);
    const room = left?.get(window) ?? windows.excess(window);
    (left ??= new Map()).set(window, Math.max(0, room - 1));
    return room > 0;
  };
}

/**
 * Whether one item offered alone may leave its window: what a fresh `windowBudget` answers for its
 * first item, without building the closure on every offer.
 */
function mayLeaveWindow<T>(windows: Windows<T> | undefined, item: T): boolean {
  return windows === undefined || windows.excess(windows.of(item)) > 0;
}

/** A saturated worker takes a target for hanging after this many `overflowAfterMs` without an attempt ending (`stuckAtLimit`). */
const HANG_SATURATED = 5;

/** A busy target stays busy this many `overflowAfterMs` after the last sign of it. */
const BUSY_FOR = 4;
