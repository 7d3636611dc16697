import type { FairShare } from './fair-share.js';
import { EndpointHealth, type HealthPolicy, type HealthState, type Transition } from './health.js';
import { NO_EFFECTS, type AttemptKind, type CircuitWait, type Effects, type Waiting } from './scheduler.js';

export interface CircuitPolicy extends HealthPolicy {
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
}

/** What the circuit asks of the scheduler that owns it. */
export interface CircuitOwner<T> {
  /** Queues a waiting item again for a slot (the first probe of a circuit that just opened). */
  requeue(target: string, waiting: Waiting<T>): void;
}

/** How an attempt ended, as the circuit counts it. */
export interface Result {
  /** It took the slow threshold or more, or passed it while running. */
  slow: boolean;
  succeeded: boolean;
  /** It was reported overdue while it ran (`overdue`). */
  wasOverdue: boolean;
  /** The callback's attempt number, if known. */
  attempt: number | undefined;
}

/**
 * Each target's circuit: its health (`EndpointHealth`, the sliding window of slow failures; degraded =
 * circuit open), the probes of open circuits, attempts counted early because they went overdue, and
 * the owed requests that ask a target about an attempt number.
 *
 * What a target costs the others is slot-time, so only slow failures (timeouts included) count against
 * it; a target that fails fast costs nothing, and one that answers slowly but well is slow, not sick.
 * While a circuit is open, a few probes per target are real attempts and every other item is deferred
 * without spending an attempt until it is owed its request (`circuitWait`); the first success closes
 * it. A probe that passes the slow threshold unanswered makes room for the next one (in
 * `probesPerTarget` and `maxProbes`), so a receiver that hung is found back within a slow threshold of
 * its recovery, not an attempt timeout. Deterministic: times are inputs.
 */
export class Circuit<T> {
  readonly health: EndpointHealth;
  /** Probes in flight per target that have not passed the slow threshold yet (`probesPerTarget`). */
  private readonly probes = new Map<string, number>();
  /** Probes in flight per target past the slow threshold: they count in neither `probes` nor `probesTotal`. */
  private readonly staleProbes = new Map<string, number>();
  private probesTotal = 0;
  /** Running attempts counted abnormal early (overdue) per target: amended if they succeed. */
  private readonly provisional = new Map<string, number>();
  /** Per target: attempt numbers asked about by an owed request under way, and since when (`mayAsk`). */
  private readonly asks = new Map<string, Map<number, number>>();

  /** `startedAtMs`: when the worker began to watch its targets (`EndpointHealth.failedThroughout`). */
  constructor(
    private readonly policy: CircuitPolicy,
    startedAtMs: number,
    private readonly share: FairShare<Waiting<T>>,
    private readonly owner: CircuitOwner<T>,
  ) {
    this.health = new EndpointHealth(policy, startedAtMs);
  }

  isOpen(target: string): boolean {
    return this.health.state(target) === 'degraded';
  }

  /** A probe place of `target`, if it has one free (`probesPerTarget`) and so do all targets (`maxProbes`). */
  takeProbe(target: string): boolean {
    const probes = this.probes.get(target) ?? 0;
    if (probes >= this.policy.probesPerTarget || this.probesTotal >= this.policy.maxProbes) return false;
    this.probes.set(target, probes + 1);
    this.probesTotal += 1;
    return true;
  }

  /**
   * Whether a deferred item, back while the circuit is still open, waits for a slot now. Not `owed`
   * yet, it is deferred again, unless it asks its target about an attempt number this worker has no
   * answer at (`mayAsk`): then it waits for a slot at once, room or not. Owed its real attempt, it
   * waits (its success closes the circuit) as long as its target holds, and waits for, fewer than its
   * limit, or (`mayBorrow`: owed for an attempt timeout already) the worker has idle slots it may borrow
   * (fewer than half taken), so a target that does not answer never takes others' share, yet its
   * backlog is not held to its own share while the slots sit idle; forced, it waits anyway.
   */
  owedMayWait(
    target: string,
    nowMs: number,
    { owed, forced, mayBorrow }: Pick<CircuitWait, 'owed' | 'forced' | 'mayBorrow'>,
    attempt?: number,
  ): boolean {
    const asks = attempt !== undefined && this.mayAsk(target, attempt, nowMs);
    const full = this.share.inFlight(target) + this.share.waiting(target) >= this.share.limit(target);
    if (!forced && !asks && !(owed && (!full || (mayBorrow && this.share.hasIdleRoom())))) return false;
    if (asks) this.asking(target).set(attempt, nowMs);
    return true;
  }

  /**
   * An attempt still running has passed the slow threshold: abnormal right now, and the target loses
   * the limit it had earned at once; unless the target has lately succeeded slowly (its result decides).
   * A target that has succeeded lately, however fast, loses its earned limit but the attempt is counted
   * only when it ends.
   */
  overdue(target: string, nowMs: number, kind: AttemptKind, attempt?: number): Effects<T> {
    if (kind === 'probe' && countDown(this.probes, target)) {
      this.probesTotal = Math.max(0, this.probesTotal - 1);
      this.staleProbes.set(target, (this.staleProbes.get(target) ?? 0) + 1);
    }
    if (this.health.worksSlowly(target, nowMs)) return NO_EFFECTS;
    this.share.slowed(target);
    // It answered lately: a machine or receiver slower than usual for a moment is no sign of a sick
    // receiver, and counted early a busy slow receiver's circuit would open for nothing. Such an
    // attempt counts when it ends.
    if (this.health.succeededLately(target, nowMs)) return NO_EFFECTS;
    this.provisional.set(target, (this.provisional.get(target) ?? 0) + 1);
    return this.effects(target, this.health.record(target, true, nowMs, false, attempt));
  }

  /** An attempt ended. One already counted when it was overdue is amended if it succeeded, never counted twice. */
  ended(target: string, kind: AttemptKind, nowMs: number, { slow, succeeded, wasOverdue, attempt }: Result): Effects<T> {
    if (kind === 'probe') this.releaseProbe(target, wasOverdue);
    if (attempt !== undefined) this.answeredAt(target, attempt);
    if (slow && succeeded) this.health.slowSuccess(target, nowMs);
    const counted = wasOverdue && countDown(this.provisional, target);
    if (counted) return this.effects(target, succeeded ? this.health.amend(target, nowMs, attempt) : undefined);
    return this.effects(target, this.health.record(target, slow && !succeeded, nowMs, succeeded, attempt));
  }

  /** Another worker's circuit transition (P.control): taken as this worker's own, effects included. */
  shared(target: string, state: HealthState, nowMs: number): Effects<T> {
    return this.effects(target, this.health.force(target, state, nowMs));
  }

  /** A started or waiting item of `target` goes without an attempt: a probe frees its place. */
  released(target: string, kind: AttemptKind): void {
    if (kind === 'probe') this.releaseProbe(target);
  }

  /** Forgets owed requests under way for ASK_STALE_MS: their items may have gone back to the broker with their channel. */
  sweep(nowMs: number): void {
    for (const [target, asking] of this.asks) {
      for (const [attempt, since] of asking) if (nowMs - since >= ASK_STALE_MS) asking.delete(attempt);
      if (asking.size === 0) this.asks.delete(target);
    }
  }

  /**
   * Whether an item at `attempt` asks its target for an answer at that attempt number: this worker has
   * none (`heardAt`), and no such request is under way (or one has been for ASK_STALE_MS). A schedule
   * runs out only on failures at every attempt number it has left, so these requests, one at a time per
   * attempt number, are what let a never-answering target's callbacks reach P.dead when they would with
   * ISOLATION=off.
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

  /** The request asking `target` about `attempt` (if any) ended: the answer is in health now. */
  private answeredAt(target: string, attempt: number): void {
    // Most targets never had an owed request: nothing to look up then.
    if (this.asks.size === 0) return;
    const asking = this.asks.get(target);
    if (asking?.delete(attempt) && asking.size === 0) this.asks.delete(target);
  }

  /**
   * The circuit just opened: what waits for a slot would only wait for a failure; it is handed back to
   * be deferred now. But the oldest stays as the circuit's first probe, so a receiver that is back
   * already (a stall that ended as its held attempts timed out) is found now, not when a deferred
   * callback comes back.
   */
  private effects(target: string, transition: Transition | undefined): Effects<T> {
    if (transition === undefined) return NO_EFFECTS;
    if (transition.to !== 'degraded') return { transition, circuitOpen: [] };
    const taken = this.share.takeWaiting(target);
    for (const waiting of taken) if (waiting.kind === 'probe') this.releaseProbe(target);
    const first = taken[0];
    if (first && this.takeProbe(target)) {
      taken.shift();
      this.owner.requeue(target, { ...first, kind: 'probe' });
    }
    return { transition, circuitOpen: taken.map((waiting) => waiting.item) };
  }

  /** A probe ended (or never started); `wasOverdue`: it had passed the slow threshold, so it is a stale one. */
  private releaseProbe(target: string, wasOverdue = false): void {
    if (wasOverdue && countDown(this.staleProbes, target)) return;
    countDown(this.probes, target);
    this.probesTotal = Math.max(0, this.probesTotal - 1);
  }
}

/** Takes one off `target`'s count, forgetting it at 0; false when there was none. */
function countDown(counts: Map<string, number>, target: string): boolean {
  const count = counts.get(target) ?? 0;
  if (count === 0) return false;
  if (count > 1) counts.set(target, count - 1);
  else counts.delete(target);
  return true;
}

/** An owed request asking about an attempt number that has not ended after this long is taken as gone (`mayAsk`). */
const ASK_STALE_MS = 60_000;
