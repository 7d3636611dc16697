import type { TargetLimit } from '../formats/target-limit.js';
import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import { parseRetryAfter } from '../policy/retry-after.js';
import type { FairShare } from './fair-share.js';
import type { Fleet } from './fleet-share.js';
import type { Waiting } from './scheduler.js';
import { TargetLimits, type Backoff } from './target-limits.js';

/** What limited targets' items waited in a worker (ms) and their starts per target, between two scrapes. */
export interface LimitStats {
  waitsMs: number[];
  starts: Map<string, number>;
}

/**
 * Operators' limits and receivers' back-offs (target-limits.ts, fleet-share.ts) applied to the
 * worker's slots: a target whose limit allows no request now is held back in FairShare, and let go
 * once it does. Waits too long to stay unacked leave through the delay path (`outwaiting`); what
 * limited targets' items waited is kept for the metrics. Targets without a limit or a back-off cost a
 * Map lookup. Deterministic: times are inputs.
 */
export class LimitGate<T> {
  private readonly limits = new TargetLimits();
  /** Since the metrics last took them: how long limited targets' items waited here (ms), and their starts per target. */
  private stats: LimitStats = { waitsMs: [], starts: new Map() };

  /** `seen`: told every time given, before the gate looks at it. */
  constructor(
    private readonly share: FairShare<Waiting<T>>,
    private readonly seen: (nowMs: number) => void,
  ) {}

  /** Holds `target` back while its limit allows no request now; lets it go once it does (or it waits for nothing). */
  gate(target: string, nowMs: number): void {
    this.seen(nowMs);
    const held =
      this.share.waiting(target) > 0 && this.limits.governs(target) && !this.limits.mayStart(target, this.share.inFlight(target), nowMs);
    this.share.hold(target, held);
  }

  /** Lets go the held targets whose limit allows a request by now. */
  gateHeld(nowMs: number): void {
    if (this.share.heldCount > 0) for (const target of [...this.share.heldTargets()]) this.gate(target, nowMs);
  }

  /** An item of `target` that waited `waitedMs` here started: it takes its limit's token. */
  started(target: string, nowMs: number, waitedMs: number): void {
    if (!this.limits.governs(target)) return;
    this.limits.started(target, nowMs);
    this.gate(target, nowMs);
    const { waitsMs, starts } = this.stats;
    if (waitsMs.length < MAX_LIMIT_SAMPLES) waitsMs.push(waitedMs);
    if (starts.has(target) || starts.size < MAX_LIMIT_SAMPLES) starts.set(target, (starts.get(target) ?? 0) + 1);
  }

  /** The receiver answered (`fast`: below the slow threshold); returns the back-off to broadcast when the answer changed it. */
  answered(target: string, outcome: DeliveryOutcome, fast: boolean, nowMs: number): Backoff | undefined {
    // Only a 429 or a 503 asks to slow down: no other answer's Retry-After is read here.
    const asksToWait = outcome.status === 429 || outcome.status === 503;
    const backoff = this.limits.answered(
      target,
      { status: outcome.status, retryAfterMs: asksToWait ? parseRetryAfter(outcome.retryAfter, nowMs) : undefined, fast },
      nowMs,
    );
    this.gate(target, nowMs);
    return backoff;
  }

  /**
   * Held back by an operator's limit or a receiver's back-off: its callbacks may wait far longer than
   * an attempt takes, and left unacked in a lane they would count towards RabbitMQ's consumer timeout
   * (30 min by default: https://www.rabbitmq.com/docs/consumers#acknowledgement-timeout), which closes
   * the lane's channel and requeues every other target's messages on it too. They leave the lane
   * whatever its window holds.
   */
  limited(target: string): boolean {
    return this.share.isHeld(target) || this.limits.governs(target);
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
          // From a lane it moves to the overflow queue (busy-targets.ts), where it waits in the broker for free.
          return (
            w.kind === 'attempt' && w.source === 'overflow' && (this.limits.msUntilNth(target, inFlight, position, nowMs) ?? 0) > boundMs
          );
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
  current(nowMs: number) {
    return this.limits.current(nowMs);
  }

  /** What limited targets' items waited, and their starts, since the last call (metrics.ts reads them on each scrape). */
  takeStats(): LimitStats {
    const taken = this.stats;
    this.stats = { waitsMs: [], starts: new Map() };
    return taken;
  }
}

/** Samples (and targets) kept between two scrapes at most; the rest are not counted. */
const MAX_LIMIT_SAMPLES = 10_000;
