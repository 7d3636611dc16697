/** How a delivery was let through: a normal one, or a probe of a degraded target. */
export type Slot = 'normal' | 'probe';

export interface BulkheadPolicy {
  /** Concurrent main-lane deliveries per target, at most. */
  perTarget: number;
  /** Concurrent deliveries a target starts with; each fast result adds one (up to `perTarget`), each abnormal one halves it. */
  initialPerTarget: number;
  /** Concurrent probes per degraded target. */
  probesPerTarget: number;
  /** Concurrent probes over all targets, so many degraded targets cannot fill the main lane. */
  maxProbes: number;
  /** Targets whose earned limit is remembered while idle; the least recently used is forgotten first. */
  maxTargets: number;
}

interface Counts {
  normal: number;
  probe: number;
}

/**
 * Counts in-flight main-lane deliveries per target and hands out slots. A target earns concurrency
 * with fast results, the way TCP's slow start does, so a target that hangs from its first request
 * holds only `initialPerTarget` slots while it is found out. Pure bookkeeping: it never waits; what
 * happens to a message without a slot is the isolation policy's call. An earned limit survives idle
 * periods (a bursty target must not start over each time); memory is bounded by `maxTargets`.
 */
export class Bulkhead {
  private readonly inFlight = new Map<string, Counts>();
  /** Earned limits, least recently used first. */
  private readonly limits = new Map<string, number>();
  private probes = 0;

  constructor(private readonly policy: BulkheadPolicy) {}

  /** A slot for `target`, or `undefined` when its limit (or, degraded, its probe allowance) is used up. */
  acquire(target: string, degraded: boolean): Slot | undefined {
    const counts = this.inFlight.get(target) ?? { normal: 0, probe: 0 };
    let slot: Slot | undefined;
    if (!degraded) {
      if (counts.normal + counts.probe < this.limit(target)) slot = 'normal';
    } else if (counts.probe < this.policy.probesPerTarget && this.probes < this.policy.maxProbes) {
      slot = 'probe';
    }
    if (slot === undefined) return undefined;
    counts[slot] += 1;
    if (slot === 'probe') this.probes += 1;
    this.inFlight.set(target, counts);
    return slot;
  }

  /** Frees a slot; a fast, good result raises the target's limit by one, an abnormal one halves it. */
  release(target: string, slot: Slot, abnormal = false): void {
    const counts = this.inFlight.get(target);
    if (!counts || counts[slot] === 0) return;
    counts[slot] -= 1;
    if (slot === 'probe') this.probes -= 1;
    const limit = this.limit(target);
    this.remember(target, abnormal ? Math.max(this.initial(), Math.floor(limit / 2)) : Math.min(this.policy.perTarget, limit + 1));
    if (counts.normal + counts.probe === 0) this.inFlight.delete(target);
  }

  /** In-flight deliveries of `target` in the main lane. */
  load(target: string): number {
    const counts = this.inFlight.get(target);
    return counts ? counts.normal + counts.probe : 0;
  }

  /** The concurrency `target` may use right now. */
  limit(target: string): number {
    return this.limits.get(target) ?? this.initial();
  }

  private initial(): number {
    return Math.min(this.policy.initialPerTarget, this.policy.perTarget);
  }

  private remember(target: string, limit: number): void {
    this.limits.delete(target);
    this.limits.set(target, limit);
    if (this.limits.size > this.policy.maxTargets) {
      const oldest = this.limits.keys().next().value;
      if (oldest !== undefined) this.limits.delete(oldest);
    }
  }
}
