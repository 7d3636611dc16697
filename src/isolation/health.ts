/** Thresholds of the per-target health state machine (seed 002: 10 abnormal of 20, quiet period T). */
export interface HealthPolicy {
  /** Results remembered per target (sliding window). */
  window: number;
  /** Abnormal results in the window that make a healthy target degraded. */
  degradeThreshold: number;
  /** A degraded target recovers only with at most this many abnormal results in the window … */
  recoverThreshold: number;
  /** … and only after this long without any new abnormal result, so a flapping target stays out. */
  quietPeriodMs: number;
  /** Targets remembered at most; the least recently seen is forgotten first (memory stays bounded). */
  maxTargets: number;
}

export type HealthState = 'healthy' | 'degraded';

export interface Transition {
  target: string;
  from: HealthState;
  to: HealthState;
  /** Abnormal results in the window at the moment of the transition. */
  abnormal: number;
  /** Results in the window. */
  seen: number;
  /** Taken from another worker's broadcast (P.control), not from this worker's own results. */
  shared?: boolean;
}

interface TargetRecord {
  state: HealthState;
  /** Ring buffer of the last results: true = abnormal. */
  results: boolean[];
  next: number;
  abnormal: number;
  lastAbnormalAt: number;
}

/**
 * Per-target health, pure: the caller passes the time. A target turns degraded when abnormal results
 * (what the caller counts as abnormal: slow ones, for target isolation) reach `degradeThreshold` in the last `window` results, and turns healthy again when
 * fast results have pushed them down to `recoverThreshold` and `quietPeriodMs` has passed since the
 * last abnormal one. State lives in memory, per worker.
 */
export class EndpointHealth {
  private readonly targets = new Map<string, TargetRecord>();

  constructor(private readonly policy: HealthPolicy) {}

  state(target: string): HealthState {
    return this.targets.get(target)?.state ?? 'healthy';
  }

  /** Remembers one result; returns the transition it caused, if any. */
  record(target: string, abnormal: boolean, nowMs: number): Transition | undefined {
    const record = this.touch(target);
    if (record.results.length < this.policy.window) {
      record.results.push(abnormal);
    } else {
      if (record.results[record.next]) record.abnormal -= 1;
      record.results[record.next] = abnormal;
      record.next = (record.next + 1) % this.policy.window;
    }
    if (abnormal) {
      record.abnormal += 1;
      record.lastAbnormalAt = nowMs;
    }
    const from = record.state;
    if (from === 'healthy' && record.abnormal >= this.policy.degradeThreshold) record.state = 'degraded';
    if (from === 'degraded' && record.abnormal <= this.policy.recoverThreshold && nowMs - record.lastAbnormalAt >= this.policy.quietPeriodMs) {
      record.state = 'healthy';
    }
    return record.state === from ? undefined : { target, from, to: record.state, abnormal: record.abnormal, seen: record.results.length };
  }

  /**
   * Takes a state another worker detected. Degraded: the circuit opens now and stays open at least a
   * quiet period, after which this worker's own probes decide. Healthy: the window starts afresh, so
   * older slow results here do not open it again at once.
   */
  force(target: string, state: HealthState, nowMs: number): Transition | undefined {
    const record = this.touch(target);
    const from = record.state;
    if (from === state) return undefined;
    record.state = state;
    if (state === 'degraded') record.lastAbnormalAt = nowMs;
    else Object.assign(record, { results: [], next: 0, abnormal: 0 });
    return { target, from, to: state, abnormal: record.abnormal, seen: record.results.length, shared: true };
  }

  /** Targets currently degraded (for metrics and logs). */
  degradedCount(): number {
    let count = 0;
    for (const record of this.targets.values()) if (record.state === 'degraded') count += 1;
    return count;
  }

  /** Up to `limit` degraded targets, the most recently seen first. */
  degradedTargets(limit: number): string[] {
    const found: string[] = [];
    for (const [target, record] of [...this.targets].reverse()) {
      if (found.length >= limit) break;
      if (record.state === 'degraded') found.push(target);
    }
    return found;
  }

  private touch(target: string): TargetRecord {
    let record = this.targets.get(target);
    if (record) {
      this.targets.delete(target);
    } else {
      record = { state: 'healthy', results: [], next: 0, abnormal: 0, lastAbnormalAt: Number.NEGATIVE_INFINITY };
      if (this.targets.size >= this.policy.maxTargets) {
        const oldest = this.targets.keys().next().value;
        if (oldest !== undefined) this.targets.delete(oldest);
      }
    }
    this.targets.set(target, record);
    return record;
  }
}
