import { Bulkhead, type BulkheadPolicy, type Slot } from './bulkhead.js';
import { classifyOutcome, type DeliveryOutcome } from './classify-outcome.js';
import { EndpointHealth, type HealthPolicy, type Transition } from './endpoint-health.js';

export type TargetKey = 'origin' | 'host';

/** The target a URL belongs to: its origin (scheme, host, port) by default, or just its host name. */
export function targetOf(url: string | URL, key: TargetKey): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return key === 'host' ? parsed.hostname : parsed.origin;
}

export interface IsolationPolicy extends HealthPolicy, BulkheadPolicy {
  /** An attempt slower than this is abnormal, like a failed one. */
  slowThresholdMs: number;
  /** Required success body, to tell a failed 2xx from a good one ('' = any 2xx). */
  successBody: string;
  /** Messages a target not yet proven fast may have waiting for a slot; a proven-fast one may use the whole room. */
  waitingPerTarget: number;
  /** Messages waiting for a slot over all targets: the rest of the prefetch stays free for others. */
  maxWaiting: number;
}

/**
 * What to do with a main-lane message:
 * - `deliver` now, in the given slot;
 * - `wait` for a slot of its (fast) target, briefly holding a prefetch slot;
 * - `defer` it back to the main lane after a short delay (its target is busy and waiting room is full);
 * - `divert` it to the slow lane (its target is degraded, or has an attempt past the slow threshold).
 * Neither `defer` nor `divert` counts as an attempt.
 */
export type Admission =
  | { kind: 'deliver'; slot: Slot }
  | { kind: 'wait' }
  | { kind: 'defer'; why: 'over-cap' }
  | { kind: 'divert'; why: 'degraded' | 'slow' };

/**
 * The isolation policy in one place: admission (bulkhead, waiting room, health) and the bookkeeping
 * of each result. Pure: times are inputs; the consumer asks and acts.
 */
export class TargetIsolation {
  private readonly health: EndpointHealth;
  private readonly bulkhead: Bulkhead;
  private readonly waiting = new Map<string, number>();
  private readonly overdueInFlight = new Map<string, number>();
  private totalWaiting = 0;

  constructor(private readonly policy: IsolationPolicy) {
    this.health = new EndpointHealth(policy);
    this.bulkhead = new Bulkhead(policy);
  }

  /** A newly consumed main-lane message. A `wait` answer reserves a place in the waiting room. */
  admit(target: string): Admission {
    const now = this.tryNow(target);
    if (now) return now;
    const waiting = this.waiting.get(target) ?? 0;
    // A target whose every recent result was fast frees its slots in moments, so its burst waits here
    // rather than taking a round trip through the delay queues; an unknown or shaky one gets little room.
    const room = this.health.provenFast(target) ? this.policy.maxWaiting : this.policy.waitingPerTarget;
    if (waiting >= room || this.totalWaiting >= this.policy.maxWaiting) return { kind: 'defer', why: 'over-cap' };
    this.bump(target, 1);
    return { kind: 'wait' };
  }

  /** The head of a target's waiting room, asked again when a slot frees or the target's health changes. */
  readmit(target: string): Admission {
    if (!this.waiting.has(target)) return this.admit(target);
    const now = this.tryNow(target);
    if (now) this.bump(target, -1);
    return now ?? { kind: 'wait' };
  }

  /** Records that an attempt still running has passed the slow threshold: abnormal, right now. */
  overdue(target: string, nowMs: number): Transition | undefined {
    this.overdueInFlight.set(target, (this.overdueInFlight.get(target) ?? 0) + 1);
    return this.health.record(target, true, nowMs);
  }

  /**
   * Records an attempt's result (main or slow lane) and frees its main-lane slot, if it had one.
   * An attempt already recorded as `overdue` is not counted twice.
   */
  complete(target: string, slot: Slot | undefined, outcome: DeliveryOutcome, nowMs: number, wasOverdue = false): Transition | undefined {
    const abnormal = wasOverdue || this.isAbnormal(outcome);
    if (slot) this.bulkhead.release(target, slot, abnormal);
    if (!wasOverdue) return this.health.record(target, abnormal, nowMs);
    const left = (this.overdueInFlight.get(target) ?? 1) - 1;
    if (left > 0) this.overdueInFlight.set(target, left);
    else this.overdueInFlight.delete(target);
    return undefined;
  }

  isAbnormal(outcome: DeliveryOutcome): boolean {
    return outcome.durationMs >= this.policy.slowThresholdMs || classifyOutcome(outcome, this.policy.successBody).kind === 'retryable';
  }

  get slowThresholdMs(): number {
    return this.policy.slowThresholdMs;
  }

  state(target: string) {
    return this.health.state(target);
  }

  degradedCount(): number {
    return this.health.degradedCount();
  }

  degradedTargets(limit: number): string[] {
    return this.health.degradedTargets(limit);
  }

  private tryNow(target: string): Admission | undefined {
    const degraded = this.health.state(target) === 'degraded';
    if (!degraded && this.overdueInFlight.has(target)) return { kind: 'divert', why: 'slow' };
    const slot = this.bulkhead.acquire(target, degraded);
    if (slot) return { kind: 'deliver', slot };
    return degraded ? { kind: 'divert', why: 'degraded' } : undefined;
  }

  private bump(target: string, by: 1 | -1): void {
    const count = (this.waiting.get(target) ?? 0) + by;
    if (count > 0) this.waiting.set(target, count);
    else this.waiting.delete(target);
    this.totalWaiting += by;
  }
}
