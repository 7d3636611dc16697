import type { TargetLimit } from '../formats/target-limit.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import { parseRetryAfter } from '../policy/retry-after.js';
import { FairShare, type FairSharePolicy } from './fair-share.js';
import type { Fleet } from './fleet-share.js';
import { EndpointHealth, type AttemptRange, type HealthPolicy, type HealthState, type Transition } from './health.js';
import { NO_EFFECTS, type AttemptEnded, type AttemptKind, type CircuitWait, type Effects, type Next, type Offered, type Scheduler, type Source, type Windows } from './scheduler.js';
import { TargetLimits, type Backoff } from './target-limits.js';

export type TargetKey = 'origin' | 'host';

/** The target a URL belongs to: its origin (scheme, host, port) by default, or just its host name. */
export function targetOf(url: string | URL, key: TargetKey): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return key === 'host' ? parsed.hostname : parsed.origin;
}

export interface IsolationPolicy extends HealthPolicy, FairSharePolicy {
  /** An attempt that takes this long is abnormal: it held a slot that others could have used. */
  slowThresholdMs: number;
  /**
   * Real attempts in flight (or about to start) per target whose circuit is open, but for those that
   * have passed `slowThresholdMs` unanswered: each of those makes room for the next probe.
   */
  probesPerTarget: number;
  /**
   * The same over all targets with an open circuit. Probes past the slow threshold are bounded by the
   * slots an open circuit may borrow (half the worker's, FairShare), not by this: counted here, a few
   * hung probes would keep every circuit from being probed until they time out.
   */
  maxProbes: number;
  /**
   * A target whose oldest waiting message has waited this long while it holds at least its initial
   * share of slots is busy: its waiting messages from the lanes leave for the overflow queue.
   */
  overflowAfterMs: number;
}

/** A waiting item, when it was offered, and whether it may still overflow. */
interface Waiting<T> {
  item: T;
  kind: AttemptKind;
  at: number;
  source: Source;
}

/**
 * Target isolation (seed 002) as one policy with one owner per piece of state:
 * - `EndpointHealth`: the sliding window of slow failures; degraded = circuit open;
 * - `FairShare`: the worker's slots, shared max-min fairly between the targets that have work;
 * - the probe counts of open circuits, and the busy targets, here.
 *
 * What a target costs the others is slot-time, so only slow failures (≥ `slowThresholdMs`, timeouts
 * included) count against it; a target that fails fast costs nothing, and one that answers slowly but
 * well is slow, not sick. While a circuit is open, a few probes per target are real attempts and every
 * other item is deferred without spending an attempt until it is owed its request (`circuitWait`,
 * `offerOwed`); the first success closes it. A probe that passes the slow threshold unanswered makes
 * room for the next one (in `probesPerTarget` and `maxProbes`), so a receiver that hung is found back
 * within a slow threshold of its recovery, not an attempt timeout (its hung attempts would otherwise
 * hold every probe place); the slots such probes hold are what an open circuit may borrow.
 *
 * A target that keeps messages waiting while it holds its share of slots, and whose attempts take
 * much longer than a move, is busy: its waiting messages from the lanes move to the overflow queue
 * (once each), so what is queued behind them in their lane, other targets' callbacks, is reached at
 * once. Deterministic: times are inputs.
 */
export class TargetIsolation<T> implements Scheduler<T> {
  private readonly health: EndpointHealth;
  private readonly share: FairShare<Waiting<T>>;
  /** Probes in flight per target that have not passed the slow threshold yet (`probesPerTarget`). */
  private readonly probes = new Map<string, number>();
  /** Probes in flight per target past the slow threshold: they count in neither `probes` nor `probesTotal`. */
  private readonly staleProbes = new Map<string, number>();
  private probesTotal = 0;
  /** Busy targets and until when they stay busy without a new sign of it. */
  private readonly busy = new Map<string, number>();
  /**
   * Per target with attempts in flight: its last sign of life, the latest of its first start since it
   * had none running and its last attempt to end (`stuckAtLimit`).
   */
  private readonly lastSign = new Map<string, number>();
  /** A target holding this many slots is among those that hold the most (worked out by each sweep). */
  private busyLine = Number.POSITIVE_INFINITY;
  /** Each target's mean attempt time (ms, moving average), the most recently finished last; bounded. */
  private readonly attemptMs = new Map<string, number>();
  /** The median of the targets' mean attempt times; worked out once per sweep that asks (undefined until then). */
  private medianAttemptMs: number | undefined;
  /** What a move to the overflow queue takes (ms, moving average); 0 until one was measured. */
  private moveMs = 0;
  /** How busy the worker's event loop is (0–1): the latest sweep's sample, and their moving average. */
  private loopBusy = { latest: 0, average: 0 };
  /** Running attempts counted abnormal early (overdue) per target: amended if they succeed. */
  private readonly provisional = new Map<string, number>();
  /** Operators' limits and receivers' back-offs: a target held back by them gets no slot (target-limits.ts). */
  private readonly limits = new TargetLimits();
  /** The latest time given, for a `next()` called without one. */
  private lastNowMs = 0;
  /** Since the metrics last took them: how long limited targets' items waited here (ms), and their starts per target. */
  private limitStats: LimitStats = { waitsMs: [], starts: new Map() };
  /** Per target: attempt numbers asked about by an owed request under way, and since when (`mayAsk`). */
  private readonly asks = new Map<string, Map<number, number>>();
  /** How full the lanes' consumer windows are (none: every busy target's item from a lane moves). */
  private windows: Windows<T> | undefined;

  /** `startedAtMs`: when the worker began to watch its targets (see `failedThroughout`). */
  constructor(
    private readonly policy: IsolationPolicy,
    startedAtMs = Number.NEGATIVE_INFINITY,
  ) {
    this.health = new EndpointHealth(policy, startedAtMs);
    // An open circuit's waiting items are probes and attempts owed their request (offerOwed).
    this.share = new FairShare(policy, (target) => this.health.state(target) === 'degraded');
  }

  /** A newly consumed item: queued for a slot (as an attempt or a probe), deferred, or moved to the overflow queue. */
  offer(target: string, item: T, source: Source, nowMs: number): Offered {
    if (this.health.state(target) === 'degraded') {
      if (!this.takeProbe(target)) return 'circuit-open';
      this.share.push(target, { item, kind: 'probe', at: nowMs, source });
      this.gate(target, nowMs);
      return 'queued';
    }
    if (source === 'lane' && this.isBusy(target, nowMs) && (this.limited(target) || mayLeaveWindow(this.windows, item))) return 'overflow';
    this.share.push(target, { item, kind: 'attempt', at: nowMs, source });
    this.gate(target, nowMs);
    return 'queued';
  }

  /**
   * A deferred item while the circuit is still open. Not `owed` yet, it is deferred again, unless it asks
   * its target about an attempt number this worker has no answer at (`mayAsk`): then it waits for a slot
   * at once, room or not. Owed its real attempt, it waits for a slot like any attempt (its success closes the circuit) as long as its target holds, and waits for, fewer than its
   * limit, or (`mayBorrow`: owed for an attempt timeout already) the worker has idle slots it may borrow
   * (fewer than half taken), so a target that does not answer never takes others' share, yet its backlog
   * is not held to its own share while the slots sit idle; forced, it waits anyway.
   * A forced one from a lane may still move to the overflow queue if its target turns busy.
   */
  offerOwed(target: string, item: T, source: Source, nowMs: number, { owed, forced, mayBorrow }: Pick<CircuitWait, 'owed' | 'forced' | 'mayBorrow'>, attempt?: number): 'queued' | 'circuit-open' {
    const asks = attempt !== undefined && this.mayAsk(target, attempt, nowMs);
    const full = this.share.inFlight(target) + this.share.waiting(target) >= this.share.limit(target);
    if (!forced && !asks && !(owed && (!full || (mayBorrow && this.share.hasIdleRoom())))) return 'circuit-open';
    if (asks) this.asking(target).set(attempt, nowMs);
    this.share.push(target, { item, kind: 'attempt', at: nowMs, source });
    this.gate(target, nowMs);
    return 'queued';
  }

  /**
   * Whether an item at `attempt` asks its target for an answer at that attempt number: this worker has
   * none (`heardAt`), and no such request is under way (or one has been for ASK_STALE_MS: its item may
   * have gone back to the broker with its channel). A schedule runs out only on failures at every
   * attempt number it has left, so these requests, one at a time per attempt number, are what let a
   * never-answering target's callbacks reach P.dead when they would with ISOLATION=off.
   */
  private mayAsk(target: string, attempt: number, nowMs: number): boolean {
    if (this.health.heardAt(target, attempt)) return false;
    const since = this.asks.get(target)?.get(attempt);
    return since === undefined || nowMs - since >= ASK_STALE_MS;
  }

  private asking(target: string): Map<number, number> {
    let asking = this.asks.get(target);
    if (!asking) this.asks.set(target, (asking = new Map()));
    return asking;
  }

  /**
   * The next item to attempt, holding one of the worker's slots until `complete` or `abandon`. A
   * target held back by its limit is let go first if its limit allows a request now.
   */
  next(nowMs = this.lastNowMs): Next<T> | undefined {
    this.lastNowMs = nowMs;
    if (this.share.heldCount > 0) for (const target of [...this.share.heldTargets()]) this.gate(target, nowMs);
    const started = this.share.next();
    if (!started) return undefined;
    if (!this.lastSign.has(started.target)) this.lastSign.set(started.target, nowMs);
    if (this.limits.governs(started.target)) {
      this.limits.started(started.target, nowMs);
      this.gate(started.target, nowMs);
      this.countLimited(started.target, nowMs - started.item.at);
    }
    return { target: started.target, item: started.item.item, kind: started.item.kind };
  }

  /** How long until the first target held back by its limit may start (a timer then calls `next`). */
  wakeInMs(nowMs: number): number | undefined {
    let soonest: number | undefined;
    for (const target of this.share.heldTargets()) {
      const wait = this.limits.msUntilOpen(target, this.share.inFlight(target), nowMs);
      if (wait !== undefined && (soonest === undefined || wait < soonest)) soonest = wait;
    }
    return soonest;
  }

  /**
   * Waiting attempts whose limit (its rate, or a receiver's pause) keeps them from starting for more than
   * `boundMs`, taken out with that wait less half the bound (capped at `maxDelayMs`): the consumer stores
   * each in the delay path for that long, so no message waits unacked long enough to meet the broker's
   * consumer timeout (https://www.rabbitmq.com/docs/consumers#acknowledgement-timeout), and each is back
   * in a worker a while before its turn, so the limit's rate is kept up. The oldest stay, and so do those
   * from a lane: they move to the overflow queue instead.
   */
  outwaiting(nowMs: number, boundMs: number, maxDelayMs: number): Array<{ item: T; delayMs: number }> {
    const out: Array<{ item: T; delayMs: number }> = [];
    // Called on every sweep: without a limit or a back-off anywhere, nothing to look at.
    if (!this.limits.governsAny) return out;
    for (const target of [...this.share.waitingTargets()]) {
      if (!this.limits.governs(target)) continue;
      const inFlight = this.share.inFlight(target);
      const waiting = this.share.waiting(target);
      const last = this.limits.msUntilNth(target, inFlight, waiting - 1, nowMs);
      if (last === undefined || last <= boundMs) continue;
      // Positions from the newest down: the n-th of `waiting` starts in msUntilNth(n).
      let position = waiting;
      const positions = new Map<Waiting<T>, number>();
      const taken = this.share.takeWaiting(
        target,
        (w) => {
          position -= 1;
          positions.set(w, position);
          // From a lane it moves to the overflow queue (`sweep`), where it waits in the broker for free.
          return w.kind === 'attempt' && w.source === 'overflow' && (this.limits.msUntilNth(target, inFlight, position, nowMs) ?? 0) > boundMs;
        },
        true,
      );
      const estimate = (item: Waiting<T>): number => this.limits.msUntilNth(target, inFlight, positions.get(item) ?? 0, nowMs) ?? boundMs;
      for (const w of taken) out.push({ item: w.item, delayMs: Math.min(maxDelayMs, estimate(w) - boundMs / 2) });
      this.gate(target, nowMs);
    }
    return out;
  }

  /** An operator's limit for `target` (undefined: cleared), from P.control or TARGET_LIMITS_FILE. */
  setLimit(target: string, limit: TargetLimit | undefined, nowMs: number): void {
    this.limits.set(target, limit, nowMs);
    this.gate(target, nowMs);
  }

  /** The live workers changed: each limit's share here changes with them. */
  setFleet(fleet: Fleet, nowMs: number): void {
    this.limits.setFleet(fleet, nowMs);
  }

  /** Another worker's back-off (P.control), taken as this worker's own. */
  shareBackoff(backoff: Backoff, nowMs: number): void {
    this.limits.shareBackoff(backoff, nowMs);
    this.gate(backoff.target, nowMs);
  }

  /** Limited or backed-off targets, for metrics. */
  limitsNow(nowMs: number) {
    return this.limits.current(nowMs);
  }

  /** What limited targets' items waited, and their starts, since the last call (metrics.ts reads them on each scrape). */
  takeLimitStats(): LimitStats {
    const taken = this.limitStats;
    this.limitStats = { waitsMs: [], starts: new Map() };
    return taken;
  }

  private countLimited(target: string, waitedMs: number): void {
    const { waitsMs, starts } = this.limitStats;
    if (waitsMs.length < MAX_LIMIT_SAMPLES) waitsMs.push(waitedMs);
    if (starts.has(target) || starts.size < MAX_LIMIT_SAMPLES) starts.set(target, (starts.get(target) ?? 0) + 1);
  }

  /** Holds `target` back while its limit allows no request now; lets it go once it does (or it waits for nothing). */
  private gate(target: string, nowMs: number): void {
    this.lastNowMs = Math.max(this.lastNowMs, nowMs);
    const held = this.share.waiting(target) > 0 && this.limits.governs(target) && !this.limits.mayStart(target, this.share.inFlight(target), nowMs);
    this.share.hold(target, held);
  }

  /**
   * An attempt still running has passed the slow threshold: abnormal right now, and the target loses
   * the limit it had earned at once; unless the target has lately succeeded slowly (its result decides).
   * A target that has succeeded lately, however fast, loses its earned limit but the attempt is counted
   * only when it ends.
   */
  overdue(target: string, nowMs: number, kind: AttemptKind, attempt?: number): Effects<T> {
    if (kind === 'probe' && this.countDown(this.probes, target)) {
      this.probesTotal = Math.max(0, this.probesTotal - 1);
      this.staleProbes.set(target, (this.staleProbes.get(target) ?? 0) + 1);
    }
    if (this.health.worksSlowly(target, nowMs)) return NO_EFFECTS;
    this.share.slowed(target);
    // It answered lately: a machine or receiver slower than usual for a moment is no sign of a sick
    // receiver; counted early, its running attempts opened the circuit of a busy 300 ms receiver on a
    // loaded machine and deferred its callbacks for nothing. Such an attempt counts when it ends.
    if (this.health.succeededLately(target, nowMs)) return NO_EFFECTS;
    this.provisional.set(target, (this.provisional.get(target) ?? 0) + 1);
    return this.effects(target, this.health.record(target, true, nowMs, false, attempt));
  }

  /** An attempt ended. One already counted when it was overdue is amended if it succeeded, never counted twice. */
  complete(target: string, kind: AttemptKind, outcome: DeliveryOutcome, nowMs: number, { wasOverdue = false, attempt }: AttemptEnded = {}): Effects<T> {
    const slow = wasOverdue || outcome.durationMs >= this.policy.slowThresholdMs;
    const succeeded = outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300;
    this.share.done(target, !slow ? 'fast' : succeeded ? 'slow-success' : 'slow');
    if (this.share.inFlight(target) === 0) this.lastSign.delete(target);
    else this.lastSign.set(target, nowMs);
    // Only a 429 or a 503 asks to slow down: no other answer's Retry-After is read here.
    const asksToWait = outcome.status === 429 || outcome.status === 503;
    const backoff = this.limits.answered(target, { status: outcome.status, retryAfterMs: asksToWait ? parseRetryAfter(outcome.retryAfter, nowMs) : undefined, fast: !slow }, nowMs);
    this.gate(target, nowMs);
    this.recordAttemptTime(target, outcome.durationMs);
    if (kind === 'probe') this.releaseProbe(target, wasOverdue);
    if (attempt !== undefined) this.answeredAt(target, attempt);
    if (slow && succeeded) this.health.slowSuccess(target, nowMs);
    const counted = wasOverdue && this.takeProvisional(target);
    const effects = counted ? this.effects(target, succeeded ? this.health.amend(target, nowMs, attempt) : undefined) : this.effects(target, this.health.record(target, slow && !succeeded, nowMs, succeeded, attempt));
    return backoff ? { ...effects, backoff } : effects;
  }

  failedThroughout(target: string, sinceMs: number, failedAfterMs: number, attempts: AttemptRange): boolean {
    return this.health.failedThroughout(target, sinceMs, failedAfterMs, attempts);
  }

  /** The request asking `target` about `attempt` (if any) ended: the answer is in health now. */
  private answeredAt(target: string, attempt: number): void {
    const asking = this.asks.get(target);
    if (asking?.delete(attempt) && asking.size === 0) this.asks.delete(target);
  }

  /** Another worker's circuit transition (P.control): taken as this worker's own, effects included. */
  shareHealth(target: string, state: HealthState, nowMs: number): Effects<T> {
    return this.effects(target, this.health.force(target, state, nowMs));
  }

  /** A started item that was not attempted after all (its channel closed): its slot is freed. */
  abandon(target: string, kind: AttemptKind): void {
    this.share.done(target, 'none');
    if (this.share.inFlight(target) === 0) this.lastSign.delete(target);
    if (kind === 'probe') this.releaseProbe(target);
  }

  /** Drops waiting items that match (their channel closed; the broker has requeued them). */
  drop(matches: (item: T) => boolean): T[] {
    const dropped = this.share.drop((waiting) => matches(waiting.item));
    for (const { target, item } of dropped) if (item.kind === 'probe') this.releaseProbe(target);
    return dropped.map(({ item }) => item.item);
  }

  /**
   * Finds the busy targets: one whose oldest waiting item has waited `overflowAfterMs` although it
   * is among those holding the most slots, or is stuck at its own limit (none of its attempts ended
   * meanwhile).
   * Its waiting items from a lane whose window is over its line (`watchWindows`) are returned to be
   * moved to the overflow queue, as many as the window's excess, and so is every item of it offered
   * from such a lane while it stays busy; a limited target's, whatever its window. A target that waits
   * because others hold the slots is not busy: it is the one that others must not hold up. One found
   * busy whose receiver is slow by itself stays so while its callbacks wait, slots or not (`stillBusy`).
   */
  sweep(nowMs: number, loopBusy = 0): T[] {
    this.loopBusy.latest = loopBusy;
    this.loopBusy.average += (loopBusy - this.loopBusy.average) * MOVING_AVERAGE_WEIGHT;
    const moved: T[] = [];
    for (const [target, until] of this.busy) if (until <= nowMs) this.busy.delete(target);
    for (const [target, asking] of this.asks) {
      for (const [attempt, since] of asking) if (nowMs - since >= ASK_STALE_MS) asking.delete(attempt);
      if (asking.size === 0) this.asks.delete(target);
    }
    this.lastNowMs = Math.max(this.lastNowMs, nowMs);
    const waiting = [...this.share.waitingTargets()];
    this.medianAttemptMs = undefined;
    const mayLeave = windowBudget(this.windows);
    // Max-min fairness caps those that hold the most: half the largest holding among the waiting is the line.
    let most = 0;
    for (const target of waiting) most = Math.max(most, this.share.inFlight(target));
    this.busyLine = Math.max(Math.min(this.policy.initialPerTarget, this.policy.capacity), Math.ceil(most / 2));
    for (const target of waiting) {
      const oldest = this.share.head(target);
      if (!oldest || nowMs - oldest.at < this.policy.overflowAfterMs) continue;
      // Waiting for its limit is reason enough: those callbacks would hold their lane for nothing.
      if (!this.share.isHeld(target) && (!(this.holdsShare(target) || this.stillBusy(target, nowMs)) || !this.worthMoving(target))) continue;
      this.busy.delete(target);
      this.busy.set(target, nowMs + BUSY_FOR * this.policy.overflowAfterMs);
      // The newest leave first: the oldest are attempted from here as soon as the busy target has a slot.
      const limited = this.limited(target);
      for (const waiting of this.share.takeWaiting(target, (w) => w.source === 'lane' && w.kind === 'attempt' && (limited || mayLeave(w.item)), true)) moved.push(waiting.item);
    }
    this.share.keep(this.backlogsKept());
    return moved;
  }

  /**
   * The targets that keep up to half the worker's slots between them (FairShare.keep): each with a
   * backlog here (half the worker's slots waiting, or more) whose pace the machine sets
   * (`pacedByMachine`). Then the other targets' attempts wait for the worker's CPU as much as for
   * slots, and max-min by slots would give each of a flood of new targets a slot before the backlog's
   * next one, for no gain to them: with four workers on two cores, 400 new targets took a 300 ms
   * receiver's every slot for the 2.5 s their 2,000 callbacks took, and it drained 1.3–1.4 times as
   * long as with ISOLATION=off, which went on serving it meanwhile (docs/isolation.md#kept-slots).
   * A receiver slower than the machine by itself is not kept: with one worker its attempts took
   * 1 s against the others' 50–140 ms, and half the slots would have halved the flood's pace.
   */
  private backlogsKept(): Set<string> {
    const kept = new Set<string>();
    for (const target of this.share.waitingTargets()) {
      if (this.share.waiting(target) * 2 < this.policy.capacity || this.limited(target) || this.health.state(target) === 'degraded') continue;
      if (this.pacedByMachine(target)) kept.add(target);
    }
    return kept;
  }

  watchWindows(windows: Windows<T>): void {
    this.windows = windows;
  }

  /**
   * Held back by an operator's limit or a receiver's back-off: its callbacks may wait far longer than
   * an attempt takes, and left unacked in a lane they would count towards RabbitMQ's consumer timeout
   * (30 min by default: https://www.rabbitmq.com/docs/consumers#acknowledgement-timeout), which closes
   * the lane's channel and requeues every other target's messages on it too. They leave the lane
   * whatever its window holds.
   */
  private limited(target: string): boolean {
    return this.share.isHeld(target) || this.limits.governs(target);
  }


  moveTook(durationMs: number): void {
    this.moveMs = this.moveMs === 0 ? durationMs : this.moveMs + (durationMs - this.moveMs) * MOVING_AVERAGE_WEIGHT;
  }

  get slowThresholdMs(): number {
    return this.policy.slowThresholdMs;
  }

  state(target: string) {
    return this.health.state(target);
  }

  inFlight(target?: string): number {
    return this.share.inFlight(target);
  }

  waiting(target?: string): number {
    return this.share.waiting(target);
  }

  degradedCount(): number {
    return this.health.degradedCount();
  }

  degradedTargets(limit: number): string[] {
    return this.health.degradedTargets(limit);
  }

  /** Found busy within the last BUSY_FOR × `overflowAfterMs`. */
  private foundBusy(target: string, nowMs: number): boolean {
    const until = this.busy.get(target);
    return until !== undefined && until > nowMs;
  }

  /**
   * Found busy, and slow by itself: its attempts take ALWAYS_WORTH_MS longer than the median target's.
   * Such a target stays busy while its callbacks wait, even once others take its slots: a flood of
   * quiet targets in the other lanes took a 300 ms receiver's slots, its backlog stopped moving, and
   * the quiet targets queued behind it in its own lane waited until the flood was served
   * (docs/isolation-journal.md#stays-busy-43). Not so equal targets through a loaded worker: each
   * waits for the others there, and kept busy their backlogs moved for nothing (about 900 of 50,000 in
   * throughput runs).
   */
  private stillBusy(target: string, nowMs: number): boolean {
    return this.foundBusy(target, nowMs) && this.slowByItself(target);
  }

  /** Its attempts take ALWAYS_WORTH_MS longer than the median target's (than nothing, with fewer than two targets timed). */
  private slowByItself(target: string): boolean {
    return (this.attemptMs.get(target) ?? 0) - this.medianMs() >= ALWAYS_WORTH_MS;
  }

  private medianMs(): number {
    return (this.medianAttemptMs ??= median(this.attemptMs));
  }

  /** Busy, and holding its share, or still busy with callbacks waiting: its callbacks offered from a lane leave it (as its window allows). */
  private isBusy(target: string, nowMs: number): boolean {
    if (!this.foundBusy(target, nowMs)) return false;
    return this.limited(target) || this.holdsShare(target) || (this.share.waiting(target) > 0 && this.stillBusy(target, nowMs));
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
   * running: it hangs. In a saturated worker HANG_SATURATED times as long: a pre-filled queue's first
   * attempts, to receivers that answer at once, took 200–400 ms there, and every target counted as
   * hanging until its first ended; sweeps moved 900–1,350 of them at once (docs/isolation-journal.md#hang-saturated).
   */
  private stuckAtLimit(target: string): boolean {
    const inFlight = this.share.inFlight(target);
    if (inFlight === 0 || inFlight < this.share.limit(target)) return false;
    const quietMs = this.lastNowMs - (this.lastSign.get(target) ?? this.lastNowMs);
    return quietMs >= (this.saturated() ? HANG_SATURATED : 1) * this.policy.overflowAfterMs;
  }

  /**
   * Moving a waiting callback costs a confirmed publish and an ack; it lets what is queued behind it
   * through sooner only where the target's attempts take much longer than that. One that hangs (no
   * attempt ended lately) is always worth moving, and so is one whose attempts take MOVE_WORTH times
   * a move. A move's time is its confirm's latency, which grows with the moves in flight and a loaded
   * broker, so measured alone it stopped the moves of a 300 ms receiver's backlog on a loaded machine,
   * when the quiet targets behind it needed them most: attempts of ALWAYS_WORTH_MS are worth a move
   * too, unless the worker itself is saturated (its event loop busy SATURATED_LOOP of the time). Then
   * every attempt waits for the worker, not for its receiver: a pre-filled queue's instant answers take
   * 150–400 ms at start, and moving them would only double the broker's work on the same cores. So
   * while saturated, a target whose attempts take no more than MOVE_WORTH times the median target's
   * is not worth a move either, whatever a move takes: ten equally fast targets through a saturated
   * worker moved up to a fifth of their callbacks, each move two broker operations more
   * (docs/isolation-journal.md); a 300 ms receiver among fast ones still moves.
   */
  private worthMoving(target: string): boolean {
    if (this.stuckAtLimit(target)) return true;
    const attemptMs = this.attemptMs.get(target) ?? 0;
    const worthItsMove = this.moveMs > 0 && attemptMs >= MOVE_WORTH * this.moveMs;
    // Until a move has been timed its cost is unknown: only attempts that are slow by any measure.
    if (!this.saturated()) return worthItsMove || attemptMs >= ALWAYS_WORTH_MS;
    // Saturated, the worker's own wait is in every target's attempts, so only ALWAYS_WORTH_MS beyond the
    // median target's is slow, whatever a move takes: else a saturated worker that had not moved yet, or
    // whose moves' confirms queued up, kept a 300 ms receiver's backlog in its lane for as long as it
    // stayed saturated. With fewer than two targets timed there is no median to measure against.
    if (this.pacedByMachine(target)) return false;
    return worthItsMove || (this.medianMs() > 0 && this.slowByItself(target));
  }

  /**
   * The worker is saturated and the target's attempts take no more than MOVE_WORTH times the median
   * target's (timed, with another target to compare): its own wait for the worker, not its receiver,
   * sets their pace. Its backlog is not worth a move then (`worthMoving`), and it keeps its slots
   * (`backlogsKept`).
   */
  private pacedByMachine(target: string): boolean {
    if (!this.saturated()) return false;
    const medianMs = this.medianMs();
    const attemptMs = this.attemptMs.get(target);
    return medianMs > 0 && attemptMs !== undefined && attemptMs <= MOVE_WORTH * medianMs;
  }

  /** Saturated as soon as one sweep's sample says so (a pre-filled queue at start), and until the average falls well below. */
  private saturated(): boolean {
    return this.loopBusy.latest >= SATURATED_LOOP || this.loopBusy.average >= SATURATED_LOOP_AVERAGE;
  }

  private recordAttemptTime(target: string, durationMs: number): void {
    const before = this.attemptMs.get(target);
    this.attemptMs.delete(target);
    this.attemptMs.set(target, before === undefined ? durationMs : before + (durationMs - before) * MOVING_AVERAGE_WEIGHT);
    // The least recently finished target is forgotten first: its average is rebuilt by its next attempts.
    if (this.attemptMs.size > this.policy.maxTargets) this.attemptMs.delete(this.attemptMs.keys().next().value as string);
  }

  private takeProvisional(target: string): boolean {
    const count = this.provisional.get(target) ?? 0;
    if (count === 0) return false;
    if (count > 1) this.provisional.set(target, count - 1);
    else this.provisional.delete(target);
    return true;
  }

  private effects(target: string, transition: Transition | undefined): Effects<T> {
    // The circuit just opened: what waits for a slot would only wait for a failure; defer it now. But
    // the oldest stays as the circuit's first probe, so a receiver that is back already (a stall that
    // ended as its held attempts timed out) is found now, not when a deferred callback comes back.
    if (transition?.to !== 'degraded') return { transition, circuitOpen: [] };
    const taken = this.share.takeWaiting(target);
    for (const waiting of taken) if (waiting.kind === 'probe') this.releaseProbe(target);
    const first = taken[0];
    if (first && this.takeProbe(target)) {
      taken.shift();
      this.share.push(target, { ...first, kind: 'probe' });
      this.gate(target, this.lastNowMs);
    }
    return { transition, circuitOpen: taken.map((waiting) => waiting.item) };
  }

  /** A probe place of `target`, if it has one free (`probesPerTarget`) and so do all targets (`maxProbes`). */
  private takeProbe(target: string): boolean {
    const probes = this.probes.get(target) ?? 0;
    if (probes >= this.policy.probesPerTarget || this.probesTotal >= this.policy.maxProbes) return false;
    this.probes.set(target, probes + 1);
    this.probesTotal += 1;
    return true;
  }

  /** A probe ended (or never started); `wasOverdue`: it had passed the slow threshold, so it is a stale one. */
  private releaseProbe(target: string, wasOverdue = false): void {
    if (wasOverdue && this.countDown(this.staleProbes, target)) return;
    this.countDown(this.probes, target);
    this.probesTotal = Math.max(0, this.probesTotal - 1);
  }

  /** Takes one off `target`'s count, forgetting it at 0; false when there was none. */
  private countDown(counts: Map<string, number>, target: string): boolean {
    const count = counts.get(target) ?? 0;
    if (count === 0) return false;
    if (count > 1) counts.set(target, count - 1);
    else counts.delete(target);
    return true;
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

/** What limited targets' items waited in a worker (ms) and their starts per target, between two scrapes. */
export interface LimitStats {
  waitsMs: number[];
  starts: Map<string, number>;
}

/** Samples (and targets) kept between two scrapes at most; the rest are not counted. */
const MAX_LIMIT_SAMPLES = 10_000;
/** An owed request asking about an attempt number that has not ended after this long is taken as gone (`mayAsk`). */
const ASK_STALE_MS = 60_000;

/** A target's backlog is worth moving when its mean attempt takes this many times a move. */
const MOVE_WORTH = 3;
/** Attempts this long are worth a move whatever a move takes now (a busy worker's instant answers take 30–60 ms). */
const ALWAYS_WORTH_MS = 150;
/** An event loop busy this share of the time is saturated: its attempt times say little of its receivers. */
const SATURATED_LOOP = 0.8;
/** … and stays saturated while the moving average of its samples is this high (about three idle sweeps after a busy stretch). */
const SATURATED_LOOP_AVERAGE = 0.5;
/** The weight of the newest sample in a moving average (attempt times, move times). */
const MOVING_AVERAGE_WEIGHT = 0.2;

/** Values the median is taken of at most (every n-th beyond), so that a sweep stays cheap with thousands of targets. */
const MEDIAN_SAMPLE = 1_024;

/** The median of `values` (sampled evenly past MEDIAN_SAMPLE); 0 for fewer than two: one target alone is no measure of the others. */
function median(values: Map<string, number>): number {
  const every = Math.ceil(values.size / MEDIAN_SAMPLE);
  const sample: number[] = [];
  let i = 0;
  for (const value of values.values()) if (i++ % every === 0) sample.push(value);
  sample.sort((a, b) => a - b);
  return sample.length < 2 ? 0 : (sample[Math.floor((sample.length - 1) / 2)] as number);
}

/** A saturated worker takes a target for hanging after this many `overflowAfterMs` without an attempt ending (`stuckAtLimit`). */
const HANG_SATURATED = 5;

/** A busy target stays busy this many `overflowAfterMs` after the last sign of it. */
const BUSY_FOR = 4;
