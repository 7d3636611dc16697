/** Limits of the fair-share scheduler. */
export interface FairSharePolicy {
  /** Deliveries in flight over all targets: the worker's concurrency. */
  capacity: number;
  /** Hard cap per target; `capacity` (the default) means none: a target alone may use everything. */
  perTarget: number;
  /** Concurrency a target starts with; each fast result adds one, each slow one halves it. */
  initialPerTarget: number;
  /** Targets whose earned limit is remembered while idle; the least recently used is forgotten first. */
  maxTargets: number;
}

interface TargetQueue<T> {
  /** Taken items are cleared and the array compacted as the head moves, so memory follows what waits. */
  waiting: (T | undefined)[];
  /** Index of the next waiting item (a head pointer, so taking one is O(1)). */
  head: number;
  inFlight: number;
}

/**
 * How an attempt ended, for the limit its target earns: `fast` adds one; `slow` (a slow failure)
 * halves it; `slow-success` halves it too but keeps it above the initial limit, so a target that works,
 * slowly, may still borrow idle slots (without it, a slow receiver alone would be capped at the initial
 * limit: slower than with no isolation); `none` (no delivery made) leaves it.
 */
export type DoneResult = 'fast' | 'slow' | 'slow-success' | 'none';

function nextLimit(result: Exclude<DoneResult, 'none'>, limit: number, initial: number, cap: number): number {
  if (result === 'fast') return Math.min(cap, limit + 1);
  const halved = Math.max(initial, Math.floor(limit / 2));
  return result === 'slow' ? halved : Math.min(cap, Math.max(initial + 1, halved));
}

/** An item chosen to start now, and its target. */
export interface Started<T> {
  target: string;
  item: T;
}

/**
 * Work-conserving max-min fair sharing of a worker's delivery slots between targets.
 *
 * Every waiting item sits in its target's FIFO. When a slot is free, the next item comes from the
 * target with the fewest deliveries in flight among those below their own limit (ties: the target
 * that became ready first). A target alone may use every slot; as soon as another has work, each
 * freed slot goes to whoever holds fewest, so capacity is split evenly between the targets that have
 * work, whatever their backlogs. A target's limit grows by one per fast result and halves on a slow
 * one (TCP-style slow start), so while others have work a target that hangs holds few slots until it
 * is found out. The limit is a priority, not a cap: a slot that no target below its limit wants is
 * lent to the waiting target with fewest in flight among those that have earned more than the initial
 * limit, so a target proven fast uses every idle slot (only `perTarget`, off by default, is a hard cap).
 * The owner may name targets that keep up to half the slots between them ahead of that order (`keep`).
 *
 * Pure bookkeeping, no clock: O(1) per operation but for a scan over in-flight counts, which stop at
 * the first non-empty one.
 */
export class FairShare<T> {
  private readonly targets = new Map<string, TargetQueue<T>>();
  /** Ready targets (waiting work, below their limit) by their in-flight count; a Set keeps arrival order. */
  private readonly ready: Set<string>[] = [];
  /** Targets with waiting work at their limit: they may borrow a slot nobody else wants. */
  private readonly blocked = new Set<string>();
  private readonly limits = new Map<string, number>();
  /** Targets held back whatever their place (an operator's limit, a back-off): never picked while here. */
  private readonly held = new Set<string>();
  /** Targets that keep up to half the slots between them, ahead of max-min order (`keep`). */
  private keeping: ReadonlySet<string> = new Set();
  private inFlightTotal = 0;
  private waitingTotal = 0;

  constructor(
    private readonly policy: FairSharePolicy,
    private readonly mayBorrowIdle: (target: string) => boolean = () => false,
  ) {}

  /** Queues an item of `target`. */
  push(target: string, item: T): void {
    const queue = this.queue(target);
    this.unready(target, queue);
    queue.waiting.push(item);
    this.waitingTotal += 1;
    this.reready(target, queue);
  }

  /** The next item to start, already counted in flight; undefined when no slot is free or nothing may start. */
  next(): Started<T> | undefined {
    if (this.inFlightTotal >= this.policy.capacity) return undefined;
    const target = this.pick();
    if (target === undefined) return undefined;
    {
      const queue = this.targets.get(target) as TargetQueue<T>;
      this.unready(target, queue);
      const item = queue.waiting[queue.head] as T;
      queue.waiting[queue.head] = undefined;
      queue.head += 1;
      if (queue.head === queue.waiting.length) {
        queue.waiting = [];
        queue.head = 0;
      } else if (queue.head >= 1_024 && queue.head * 2 >= queue.waiting.length) {
        queue.waiting = queue.waiting.slice(queue.head);
        queue.head = 0;
      }
      this.waitingTotal -= 1;
      queue.inFlight += 1;
      this.inFlightTotal += 1;
      this.reready(target, queue);
      return { target, item };
    }
  }

  /**
   * The ready target with fewest in flight; else the blocked one with fewest that may borrow: a target
   * that has earned more than its initial limit, so one that has shown nothing but slowness (or nothing
   * yet) never takes more than its own share while it is being found out. Except a target the owner
   * marks (`mayBorrowIdle`: one whose circuit is open, whose only waiting items are attempts owed their
   * request): it may borrow while fewer than half the slots are taken, the other half staying free for
   * targets that answer. Held to its own limit, a backlog of a target that hangs would reach the
   * dead-letter queue far later than without isolation, with the slots idle meanwhile.
   */
  private pick(): string | undefined {
    const kept = this.keptPick();
    if (kept !== undefined) return kept;
    for (const bucket of this.ready) if (bucket && bucket.size > 0) return bucket.values().next().value as string;
    let best: string | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    const lendsIdle = this.inFlightTotal < this.lendLine();
    for (const target of this.blocked) {
      const inFlight = this.targets.get(target)?.inFlight ?? 0;
      if (inFlight < fewest && inFlight < this.policy.perTarget && (this.limits.has(target) || (lendsIdle && this.mayBorrowIdle(target))))
        [best, fewest] = [target, inFlight];
    }
    return best;
  }

  /**
   * The target of `keep` below its own limit with fewest in flight, while those targets hold fewer
   * than half the slots between them.
   */
  private keptPick(): string | undefined {
    if (this.keeping.size === 0) return undefined;
    let held = 0;
    let best: string | undefined;
    let fewest = Number.POSITIVE_INFINITY;
    for (const target of this.keeping) {
      const queue = this.targets.get(target);
      if (!queue) continue;
      held += queue.inFlight;
      if (queue.inFlight < fewest && this.ready[queue.inFlight]?.has(target)) [best, fewest] = [target, queue.inFlight];
    }
    return held < this.lendLine() ? best : undefined;
  }

  /**
   * These targets keep up to half the slots between them (the fewest in flight first): a freed slot
   * goes to one of them, below its own limit, before max-min order is asked. The owner decides when
   * that is fair (TargetIsolation: backlogs on a worker whose attempts wait for its machine, not for
   * slots); the rest of the slots are shared max-min as ever, these targets included.
   */
  keep(targets: ReadonlySet<string>): void {
    this.keeping = targets;
  }

  /** Below this many slots in flight, idle slots are lent to the targets of `mayBorrowIdle` (see pick); also what those of `keep` may keep. */
  private lendLine(): number {
    return Math.floor(this.policy.capacity / 2);
  }

  /** Whether what is in flight and waiting leaves idle slots that a target of `mayBorrowIdle` may borrow. */
  hasIdleRoom(): boolean {
    return this.inFlightTotal + this.waitingTotal < this.lendLine();
  }

  /**
   * A started item finished. `result`: `fast` raises the target's limit, `slow` halves it, `none`
   * (no delivery was made, e.g. the item was dropped) leaves it.
   */
  done(target: string, result: DoneResult): void {
    const queue = this.targets.get(target);
    if (!queue || queue.inFlight === 0) return;
    this.unready(target, queue);
    queue.inFlight -= 1;
    this.inFlightTotal -= 1;
    if (result !== 'none') {
      const limit = this.limit(target);
      this.remember(target, nextLimit(result, limit, this.initial(), this.policy.perTarget));
    }
    if (queue.inFlight === 0 && queue.head === queue.waiting.length) this.targets.delete(target);
    else this.reready(target, queue);
  }

  /**
   * Takes the waiting items of `target` out (those that match, or all): its circuit opened, or it is
   * busy and its excess leaves the worker. Both keep their order. `newestFirst`: `matches` sees the
   * newest first, so a bounded take leaves the oldest waiting.
   */
  takeWaiting(target: string, matches: (item: T) => boolean = () => true, newestFirst = false): T[] {
    const queue = this.targets.get(target);
    if (!queue) return [];
    this.unready(target, queue);
    const taken: T[] = [];
    const kept: T[] = [];
    const waiting = queue.waiting.slice(queue.head) as T[];
    if (newestFirst) waiting.reverse();
    for (const item of waiting) (matches(item) ? taken : kept).push(item);
    if (newestFirst) {
      kept.reverse();
      taken.reverse();
    }
    this.waitingTotal -= taken.length;
    queue.waiting = kept;
    queue.head = 0;
    if (queue.inFlight === 0 && kept.length === 0) this.targets.delete(target);
    else this.reready(target, queue);
    return taken;
  }

  /** The item of `target` that has waited longest, if any. */
  head(target: string): T | undefined {
    const queue = this.targets.get(target);
    return queue && queue.head < queue.waiting.length ? (queue.waiting[queue.head] as T) : undefined;
  }

  /** Targets with items waiting or in flight. */
  activeTargets(): number {
    return this.targets.size;
  }

  /** Targets with items waiting. */
  *waitingTargets(): IterableIterator<string> {
    for (const [target, queue] of this.targets) if (queue.head < queue.waiting.length) yield target;
  }

  /** Removes waiting items that match (their channel closed: the broker has requeued them) and returns them. */
  drop(matches: (item: T) => boolean): Started<T>[] {
    const dropped: Started<T>[] = [];
    for (const [target, queue] of [...this.targets]) {
      const kept: T[] = [];
      const before = dropped.length;
      for (const item of queue.waiting.slice(queue.head) as T[]) {
        if (matches(item)) dropped.push({ target, item });
        else kept.push(item);
      }
      const removed = dropped.length - before;
      if (removed === 0) continue;
      this.unready(target, queue);
      this.waitingTotal -= removed;
      queue.waiting = kept;
      queue.head = 0;
      if (queue.inFlight === 0 && kept.length === 0) this.targets.delete(target);
      else this.reready(target, queue);
    }
    return dropped;
  }

  inFlight(target?: string): number {
    return target === undefined ? this.inFlightTotal : (this.targets.get(target)?.inFlight ?? 0);
  }

  waiting(target?: string): number {
    if (target === undefined) return this.waitingTotal;
    const queue = this.targets.get(target);
    return queue ? queue.waiting.length - queue.head : 0;
  }

  /** The concurrency `target` has earned. */
  limit(target: string): number {
    return this.limits.get(target) ?? this.initial();
  }

  private queue(target: string): TargetQueue<T> {
    let queue = this.targets.get(target);
    if (!queue) {
      queue = { waiting: [], head: 0, inFlight: 0 };
      this.targets.set(target, queue);
    }
    return queue;
  }

  private unready(target: string, queue: TargetQueue<T>): void {
    this.ready[queue.inFlight]?.delete(target);
    this.blocked.delete(target);
  }

  private reready(target: string, queue: TargetQueue<T>): void {
    if (queue.head === queue.waiting.length || this.held.has(target)) return;
    if (queue.inFlight >= this.limit(target)) this.blocked.add(target);
    else (this.ready[queue.inFlight] ??= new Set()).add(target);
  }

  private initial(): number {
    return Math.min(this.policy.initialPerTarget, this.policy.perTarget);
  }

  /** Holds `target` back (its waiting items are never picked) or lets it go again. */
  hold(target: string, held: boolean): void {
    if (this.held.has(target) === held) return;
    this.refile(target, () => (held ? this.held.add(target) : this.held.delete(target)));
  }

  isHeld(target: string): boolean {
    return this.held.has(target);
  }

  /** Targets held back now. */
  heldTargets(): IterableIterator<string> {
    return this.held.values();
  }

  get heldCount(): number {
    return this.held.size;
  }

  /** A running attempt of `target` turned slow: it loses what it earned now, not when the attempt ends. */
  slowed(target: string): void {
    this.refile(target, () => this.limits.delete(target));
  }

  private remember(target: string, limit: number): void {
    this.limits.delete(target);
    if (limit === this.initial()) return;
    this.limits.set(target, limit);
    if (this.limits.size > this.policy.maxTargets) {
      const oldest = this.limits.keys().next().value;
      if (oldest !== undefined) this.refile(oldest, () => this.limits.delete(oldest));
    }
  }

  /** Changes what `target` may have, then files it again as ready or blocked. */
  private refile(target: string, change: () => void): void {
    const queue = this.targets.get(target);
    if (queue) this.unready(target, queue);
    change();
    if (queue) this.reready(target, queue);
  }
}
