/** How a delivery was let through: a normal one, or a probe of a degraded target. */
export type Slot = 'normal' | 'probe';

export interface BulkheadPolicy {
  /** Concurrent main-lane deliveries per target. */
  perTarget: number;
  /** Concurrent probes per degraded target. */
  probesPerTarget: number;
  /** Concurrent probes over all targets, so many degraded targets cannot fill the main lane. */
  maxProbes: number;
}

/**
 * Counts in-flight main-lane deliveries per target and hands out slots. Pure bookkeeping: it never
 * waits; what happens to a message without a slot is the isolation policy's call. Memory is bounded
 * by the deliveries in flight.
 */
export class Bulkhead {
  private readonly inFlight = new Map<string, { normal: number; probe: number }>();
  private probes = 0;

  constructor(private readonly policy: BulkheadPolicy) {}

  /** A slot for `target`, or `undefined` when its cap (or, degraded, its probe allowance) is used up. */
  acquire(target: string, degraded: boolean): Slot | undefined {
    const counts = this.inFlight.get(target) ?? { normal: 0, probe: 0 };
    let slot: Slot | undefined;
    if (!degraded) {
      if (counts.normal + counts.probe < this.policy.perTarget) slot = 'normal';
    } else if (counts.probe < this.policy.probesPerTarget && this.probes < this.policy.maxProbes) {
      slot = 'probe';
    }
    if (slot === undefined) return undefined;
    counts[slot] += 1;
    if (slot === 'probe') this.probes += 1;
    this.inFlight.set(target, counts);
    return slot;
  }

  release(target: string, slot: Slot): void {
    const counts = this.inFlight.get(target);
    if (!counts || counts[slot] === 0) return;
    counts[slot] -= 1;
    if (slot === 'probe') this.probes -= 1;
    if (counts.normal + counts.probe === 0) this.inFlight.delete(target);
  }

  /** In-flight deliveries of `target` in the main lane. */
  load(target: string): number {
    const counts = this.inFlight.get(target);
    return counts ? counts.normal + counts.probe : 0;
  }
}
