import type { DeliveryOutcome } from '../policy/classify-outcome.js';
import { FairShare, type FairSharePolicy, type Started } from './fair-share.js';
import { EndpointHealth, type HealthPolicy, type HealthState, type Transition } from './health.js';

export type TargetKey = 'origin' | 'host';

/** The target a URL belongs to: its origin (scheme, host, port) by default, or just its host name. */
export function targetOf(url: string | URL, key: TargetKey): string {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  return key === 'host' ? parsed.hostname : parsed.origin;
}

export interface IsolationPolicy extends HealthPolicy, FairSharePolicy {
  /** An attempt that takes this long is abnormal: it held a slot that others could have used. */
  slowThresholdMs: number;
  /** Real attempts in flight (or about to start) per target whose circuit is open. */
  probesPerTarget: number;
  /** The same over all targets with an open circuit. */
  maxProbes: number;
}

/** How a started item is attempted: a normal attempt, or a probe of a target whose circuit is open. */
export type AttemptKind = 'attempt' | 'probe';

export interface Next<T> extends Started<T> {
  kind: AttemptKind;
}

/** What a result changed: a health transition (one log line), and items to fail fast now. */
export interface Effects<T> {
  transition: Transition | undefined;
  failFast: T[];
}

/** The `error` of an attempt failed fast because its target's circuit is open: no request was made. */
export const CIRCUIT_OPEN = 'circuit open';

/** What the consumer asks of a scheduler: target isolation, or arrival order when isolation is off. */
export interface Scheduler<T> {
  offer(target: string, item: T): 'queued' | 'fail-fast';
  next(): Next<T> | undefined;
  /** Called once a running attempt passes `slowThresholdMs` (never when that is undefined). */
  overdue(target: string, nowMs: number): Effects<T>;
  complete(target: string, kind: AttemptKind, outcome: DeliveryOutcome, nowMs: number, wasOverdue?: boolean): Effects<T>;
  abandon(target: string, kind: AttemptKind): void;
  drop(matches: (item: T) => boolean): T[];
  readonly slowThresholdMs: number | undefined;
  /** Another worker's circuit transition, taken as this one's own (absent when isolation is off). */
  shareHealth?(target: string, state: HealthState, nowMs: number): Effects<T>;
}

const NO_EFFECTS: Effects<never> = { transition: undefined, failFast: [] };

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

/**
 * Target isolation (seed 002) as one policy with one owner per piece of state:
 * - `EndpointHealth`: the sliding window of slow results and the quiet period; degraded = circuit open;
 * - `FairShare`: the worker's slots, shared max-min fairly between the targets that have work;
 * - the probe counts of open circuits, here.
 *
 * What a target costs the others is slot-time, so only slow attempts (≥ `slowThresholdMs`, timeouts
 * included) count against it; a target that fails fast costs nothing and keeps real attempts on its
 * schedule. While a circuit is open, a few probes per target are real attempts and every other item
 * is failed fast: an attempt that makes no request (the consumer records it as `circuit open`), so
 * the retry schedule and the attempt budget carry on as if the target had answered at once.
 * Deterministic: times are inputs.
 */
export class TargetIsolation<T> implements Scheduler<T> {
  private readonly health: EndpointHealth;
  private readonly share: FairShare<{ item: T; kind: AttemptKind }>;
  private readonly probes = new Map<string, number>();
  private probesTotal = 0;

  constructor(private readonly policy: IsolationPolicy) {
    this.health = new EndpointHealth(policy);
    this.share = new FairShare(policy);
  }

  /** A newly consumed item: queued for a slot (as an attempt or a probe), or to be failed fast now. */
  offer(target: string, item: T): 'queued' | 'fail-fast' {
    if (this.health.state(target) !== 'degraded') {
      this.share.push(target, { item, kind: 'attempt' });
      return 'queued';
    }
    const probes = this.probes.get(target) ?? 0;
    if (probes >= this.policy.probesPerTarget || this.probesTotal >= this.policy.maxProbes) return 'fail-fast';
    this.probes.set(target, probes + 1);
    this.probesTotal += 1;
    this.share.push(target, { item, kind: 'probe' });
    return 'queued';
  }

  /** The next item to attempt, holding one of the worker's slots until `complete` or `abandon`. */
  next(): Next<T> | undefined {
    const started = this.share.next();
    return started && { target: started.target, item: started.item.item, kind: started.item.kind };
  }

  /** An attempt still running has passed the slow threshold: abnormal, right now. */
  overdue(target: string, nowMs: number): Effects<T> {
    this.share.slowed(target);
    return this.effects(target, this.health.record(target, true, nowMs));
  }

  /** An attempt ended. One already reported `overdue` is not counted twice. */
  complete(target: string, kind: AttemptKind, outcome: DeliveryOutcome, nowMs: number, wasOverdue = false): Effects<T> {
    const slow = wasOverdue || outcome.durationMs >= this.policy.slowThresholdMs;
    this.share.done(target, slow ? 'slow' : 'fast');
    if (kind === 'probe') this.releaseProbe(target);
    return this.effects(target, wasOverdue ? undefined : this.health.record(target, slow, nowMs));
  }

  /** Another worker's circuit transition (P.control): taken as this worker's own, effects included. */
  shareHealth(target: string, state: HealthState, nowMs: number): Effects<T> {
    return this.effects(target, this.health.force(target, state, nowMs));
  }

  /** A started item that was not attempted after all (its channel closed): its slot is freed. */
  abandon(target: string, kind: AttemptKind): void {
    this.share.done(target, 'none');
    if (kind === 'probe') this.releaseProbe(target);
  }

  /** Drops waiting items that match (their channel closed; the broker has requeued them). */
  drop(matches: (item: T) => boolean): T[] {
    const dropped = this.share.drop((waiting) => matches(waiting.item));
    for (const { target, item } of dropped) if (item.kind === 'probe') this.releaseProbe(target);
    return dropped.map(({ item }) => item.item);
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

  private effects(target: string, transition: Transition | undefined): Effects<T> {
    // The circuit just opened: what waits for a slot would only wait to fail; fail it fast now.
    if (transition?.to !== 'degraded') return { transition, failFast: [] };
    const taken = this.share.takeWaiting(target);
    for (const waiting of taken) if (waiting.kind === 'probe') this.releaseProbe(target);
    return { transition, failFast: taken.map((waiting) => waiting.item) };
  }

  private releaseProbe(target: string): void {
    const left = (this.probes.get(target) ?? 1) - 1;
    if (left > 0) this.probes.set(target, left);
    else this.probes.delete(target);
    this.probesTotal = Math.max(0, this.probesTotal - 1);
  }
}
