import type { TargetLimit } from '../formats/target-limit.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import { BusyTargets, type BusyPolicy } from './busy-targets.js';
import { Circuit, type CircuitPolicy } from './circuit.js';
import { FairShare } from './fair-share.js';
import type { Fleet } from './fleet-share.js';
import type { AttemptRange, HealthState } from './health.js';
import { LimitGate, type LimitStats } from './limit-gate.js';
import type { AttemptEnded, AttemptKind, CircuitWait, Effects, Next, Offered, Scheduler, Source, Waiting, Windows } from './scheduler.js';
import type { Backoff } from './target-limits.js';

export type { LimitStats } from './limit-gate.js';

export type TargetKey = 'origin' | 'host';

/** The target a URL belongs to: its origin (scheme, host, port) by default, or just its host name. */
export function targetOf(url: string | URL, key: TargetKey): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return key === 'host' ? parsed.hostname : parsed.origin;
}

export interface IsolationPolicy extends CircuitPolicy, BusyPolicy {
  /** An attempt that takes this long is abnormal: it held a slot that others could have used. */
  slowThresholdMs: number;
}

/**
 * Target isolation (seed 002; docs/isolation.md): the scheduler of the defaults, one owner per piece of
 * state, composed here:
 * - `FairShare`: the worker's slots, shared max-min fairly between the targets that have work;
 * - `Circuit`: each target's health, the probes of open circuits and the requests they are owed;
 * - `BusyTargets`: busy targets, whose waiting callbacks leave their lanes for the overflow queue;
 * - `LimitGate`: operators' limits and receivers' back-offs, which hold a target back.
 * Deterministic: times are inputs.
 */
export class TargetIsolation<T> implements Scheduler<T> {
  private readonly share: FairShare<Waiting<T>>;
  private readonly circuit: Circuit<T>;
  private readonly busy: BusyTargets<T>;
  private readonly limits: LimitGate<T>;
  /** The latest time given, for a `next()` called without one. */
  private lastNowMs = 0;

  /** `startedAtMs`: when the worker began to watch its targets (see `failedThroughout`). */
  constructor(
    private readonly policy: IsolationPolicy,
    startedAtMs = Number.NEGATIVE_INFINITY,
  ) {
    // An open circuit's waiting items are probes and attempts owed their request (offerOwed).
    this.share = new FairShare(policy, (target) => this.circuit.isOpen(target));
    this.limits = new LimitGate(this.share, (nowMs) => {
      if (nowMs > this.lastNowMs) this.lastNowMs = nowMs;
    });
    this.circuit = new Circuit(policy, startedAtMs, this.share, {
      requeue: (target, waiting) => this.enqueue(target, waiting, this.lastNowMs),
    });
    this.busy = new BusyTargets(policy, this.share, {
      limited: (target) => this.limits.limited(target),
      degraded: (target) => this.circuit.isOpen(target),
      latestMs: () => this.lastNowMs,
    });
  }

  /** A newly consumed item: queued for a slot (as an attempt or a probe), deferred, or moved to the overflow queue. */
  offer(target: string, item: T, source: Source, nowMs: number): Offered {
    if (this.circuit.isOpen(target)) {
      if (!this.circuit.takeProbe(target)) return 'circuit-open';
      this.enqueue(target, { item, kind: 'probe', at: nowMs, source }, nowMs);
      return 'queued';
    }
    if (source === 'lane' && this.busy.overflows(target, item, nowMs)) return 'overflow';
    this.enqueue(target, { item, kind: 'attempt', at: nowMs, source }, nowMs);
    return 'queued';
  }

  /**
   * A deferred item while the circuit is still open: queued as an attempt if the circuit lets it
   * (`Circuit.owedMayWait`), else left to be deferred again. A forced one from a lane may still move
   * to the overflow queue if its target turns busy.
   */
  offerOwed(
    target: string,
    item: T,
    source: Source,
    nowMs: number,
    wait: Pick<CircuitWait, 'owed' | 'forced' | 'mayBorrow'>,
    attempt?: number,
  ): 'queued' | 'circuit-open' {
    if (!this.circuit.owedMayWait(target, nowMs, wait, attempt)) return 'circuit-open';
    this.enqueue(target, { item, kind: 'attempt', at: nowMs, source }, nowMs);
    return 'queued';
  }

  /**
   * The next item to attempt, holding one of the worker's slots until `complete` or `abandon`. A
   * target held back by its limit is let go first if its limit allows a request now.
   */
  next(nowMs = this.lastNowMs): Next<T> | undefined {
    this.lastNowMs = nowMs;
    this.limits.gateHeld(nowMs);
    const started = this.share.next();
    if (!started) return undefined;
    const { target, item } = started;
    this.busy.started(target, nowMs);
    this.limits.started(target, nowMs, nowMs - item.at);
    return { target, item: item.item, kind: item.kind };
  }

  /** Called once a running attempt passes the slow threshold (Circuit.overdue). */
  overdue(target: string, nowMs: number, kind: AttemptKind, attempt?: number): Effects<T> {
    return this.circuit.overdue(target, nowMs, kind, attempt);
  }

  /** An attempt ended: its slot is freed, its limit and pace learn of it, and its circuit counts it. */
  complete(
    target: string,
    kind: AttemptKind,
    outcome: DeliveryOutcome,
    nowMs: number,
    { wasOverdue = false, attempt }: AttemptEnded = {},
  ): Effects<T> {
    const slow = wasOverdue || outcome.durationMs >= this.policy.slowThresholdMs;
    const succeeded = outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300;
    this.share.done(target, !slow ? 'fast' : succeeded ? 'slow-success' : 'slow');
    this.busy.ended(target, nowMs, outcome.durationMs);
    const backoff = this.limits.answered(target, outcome, !slow, nowMs);
    const effects = this.circuit.ended(target, kind, nowMs, { slow, succeeded, wasOverdue, attempt });
    return backoff ? { ...effects, backoff } : effects;
  }

  /** A started item that was not attempted after all (its channel closed): its slot is freed. */
  abandon(target: string, kind: AttemptKind): void {
    this.share.done(target, 'none');
    this.busy.abandoned(target);
    this.circuit.released(target, kind);
  }

  /** Drops waiting items that match (their channel closed; the broker has requeued them). */
  drop(matches: (item: T) => boolean): T[] {
    const dropped = this.share.drop((waiting) => matches(waiting.item));
    for (const { target, item } of dropped) this.circuit.released(target, item.kind);
    return dropped.map(({ item }) => item.item);
  }

  /** Busy targets' waiting items to move to the overflow queue now (BusyTargets.sweep). */
  sweep(nowMs: number, loopBusy = 0): T[] {
    this.circuit.sweep(nowMs);
    if (nowMs > this.lastNowMs) this.lastNowMs = nowMs;
    return this.busy.sweep(nowMs, loopBusy);
  }

  moveTook(durationMs: number): void {
    this.busy.moveTook(durationMs);
  }

  watchWindows(windows: Windows<T>): void {
    this.busy.watchWindows(windows);
  }

  /** Another worker's circuit transition (P.control): taken as this worker's own, effects included. */
  shareHealth(target: string, state: HealthState, nowMs: number): Effects<T> {
    return this.circuit.shared(target, state, nowMs);
  }

  failedThroughout(target: string, sinceMs: number, failedAfterMs: number, attempts: AttemptRange): boolean {
    return this.circuit.health.failedThroughout(target, sinceMs, failedAfterMs, attempts);
  }

  /** How long until the first target held back by its limit may start (a timer then calls `next`). */
  wakeInMs(nowMs: number): number | undefined {
    return this.limits.wakeInMs(nowMs);
  }

  /** Waiting attempts that would wait for their limit longer than `boundMs` (LimitGate.outwaiting). */
  outwaiting(nowMs: number, boundMs: number, maxDelayMs: number): Array<{ item: T; delayMs: number }> {
    return this.limits.outwaiting(nowMs, boundMs, maxDelayMs);
  }

  /** An operator's limit for `target` (undefined: cleared), from P.control or TARGET_LIMITS_FILE. */
  setLimit(target: string, limit: TargetLimit | undefined, nowMs: number): void {
    this.limits.setLimit(target, limit, nowMs);
  }

  /** The live workers changed: each limit's share here changes with them. */
  setFleet(fleet: Fleet, nowMs: number): void {
    this.limits.setFleet(fleet, nowMs);
  }

  /** Another worker's back-off (P.control), taken as this worker's own. */
  shareBackoff(backoff: Backoff, nowMs: number): void {
    this.limits.shareBackoff(backoff, nowMs);
  }

  /** Limited or backed-off targets, for metrics. */
  limitsNow(nowMs: number) {
    return this.limits.current(nowMs);
  }

  /** What limited targets' items waited, and their starts, since the last call (metrics.ts reads them on each scrape). */
  takeLimitStats(): LimitStats {
    return this.limits.takeStats();
  }

  get slowThresholdMs(): number {
    return this.policy.slowThresholdMs;
  }

  state(target: string) {
    return this.circuit.health.state(target);
  }

  inFlight(target?: string): number {
    return this.share.inFlight(target);
  }

  waiting(target?: string): number {
    return this.share.waiting(target);
  }

  degradedCount(): number {
    return this.circuit.health.degradedCount();
  }

  degradedTargets(limit: number): string[] {
    return this.circuit.health.degradedTargets(limit);
  }

  /** Queues `waiting` for a slot, then holds its target back if its limit allows no request now. */
  private enqueue(target: string, waiting: Waiting<T>, nowMs: number): void {
    this.share.push(target, waiting);
    this.limits.gate(target, nowMs);
  }
}
