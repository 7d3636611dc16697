import type { AttemptRange } from '../policy/retry-schedule.js';

/** Thresholds of the per-target health state machine (seed 002: 10 abnormal of 20, quiet period T). */
export interface HealthPolicy {
  /** Results remembered per target (sliding window). */
  window: number;
  /** Abnormal results in the window that make a healthy target degraded. */
  degradeThreshold: number;
  /** A degraded target recovers only with at most this many abnormal results in the window … */
  recoverThreshold: number;
  /**
   * … and only after this long without any new abnormal result. Also the flap window: a circuit that
   * opens again this soon after closing needs twice the successes in a row to close.
   */
  quietPeriodMs: number;
  /**
   * Targets remembered at most (memory stays bounded): the least recently seen healthy one is forgotten
   * first, a degraded one only when every target remembered is degraded (forgetting it closes its circuit).
   */
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
  /** While degraded: successes in a row since the circuit opened (or since the last failure). */
  successes: number;
  /** Successes in a row that close the circuit: 1, doubled each time it opens again soon after closing. */
  required: number;
  /** When the circuit last closed (flap detection). */
  closedAt: number;
  /** When an attempt last succeeded although it took the slow threshold or more: the target works, slowly. */
  slowSuccessAt: number;
  /** When an attempt last succeeded, however fast. */
  successAt: number;
  /** When an attempt of this worker's last failed, or passed the slow threshold unanswered. */
  failureAt: number;
  /**
   * Per attempt number (index 1 … MAX_TRACKED_ATTEMPT): whether the target's latest answer to a request
   * of that attempt was a failure. A receiver's answer may depend on the attempt (a retry that finds its
   * work done answers at once where the first attempt hung), so failures at attempt 1 say nothing of
   * attempt 2.
   */
  failedAt: boolean[];
}

/** Attempt numbers tracked per target (memory stays bounded); a callback with more left is never judged to have failed throughout. */
export const MAX_TRACKED_ATTEMPT = 64;

export type { AttemptRange };

/** Successes in a row a flapping target needs at most to close its circuit. */
export const MAX_REQUIRED_SUCCESSES = 16;

/**
 * Per-target health, pure: the caller passes the time. A target turns degraded (its circuit opens) when
 * abnormal results (what the caller counts as abnormal: slow failures, for target isolation) reach
 * `degradeThreshold` in the last `window` results. It turns healthy again as soon as its attempts
 * succeed: one success closes a circuit that opened for the first time. A circuit that opens again
 * within `quietPeriodMs` of closing needs twice as many successes in a row as the time before (up to
 * MAX_REQUIRED_SUCCESSES), so a flapping target stays out longer each time without any fixed wait.
 * The seed's route stays too: fast results that push the abnormal ones down to `recoverThreshold`
 * after `quietPeriodMs` without a new one close it. State lives in memory, per worker.
 */
export class EndpointHealth {
  private readonly targets = new Map<string, TargetRecord>();

  /**
   * `knownSince`: since when this worker has watched its targets' results (its start); moved on each
   * time it forgets a target (`maxTargets`), whose successes before are then unknown.
   */
  constructor(
    private readonly policy: HealthPolicy,
    private knownSince = Number.NEGATIVE_INFINITY,
  ) {}

  state(target: string): HealthState {
    return this.targets.get(target)?.state ?? 'healthy';
  }

  /** Remembers one result (`succeeded`: the receiver accepted the callback); returns the transition it caused, if any. */
  record(target: string, abnormal: boolean, nowMs: number, succeeded = false, attempt?: number): Transition | undefined {
    const record = this.touch(target, nowMs);
    noteAttempt(record, attempt, !succeeded);
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
    if (succeeded) record.successAt = nowMs;
    else record.failureAt = nowMs;
    return this.decide(target, record, nowMs, succeeded);
  }

  /**
   * An abnormal result recorded early (an attempt still running passed the slow threshold) ended in a
   * success after all: it counts as normal, and as a success.
   */
  amend(target: string, nowMs: number, attempt?: number): Transition | undefined {
    const record = this.touch(target, nowMs);
    noteAttempt(record, attempt, false);
    const at = record.results.lastIndexOf(true);
    if (at >= 0) {
      record.results[at] = false;
      record.abnormal -= 1;
    }
    record.slowSuccessAt = nowMs;
    record.successAt = nowMs;
    return this.decide(target, record, nowMs, true);
  }

  /** A success that took the slow threshold or more: the target works, slowly (see `worksSlowly`). */
  slowSuccess(target: string, nowMs: number): void {
    this.touch(target, nowMs).slowSuccessAt = nowMs;
  }

  /** Succeeded within the last quiet period, however fast: an attempt passing the threshold is not counted before it ends. */
  succeededLately(target: string, nowMs: number): boolean {
    const at = this.targets.get(target)?.successAt;
    return at !== undefined && nowMs - at < this.policy.quietPeriodMs;
  }

  /**
   * Degraded, no attempt succeeded since `sinceMs`, one of this worker's failed (or went overdue) at
   * `failedAfterMs` or later, and the latest request at every attempt number in `attempts` failed. Only
   * what this worker has seen counts, so it must have watched every target since `sinceMs`: one that
   * started later, or forgot a target since, knows nothing of the successes before.
   */
  failedThroughout(target: string, sinceMs: number, failedAfterMs: number, attempts: AttemptRange): boolean {
    const record = this.targets.get(target);
    if (
      record === undefined ||
      record.state !== 'degraded' ||
      this.knownSince > sinceMs ||
      record.successAt >= sinceMs ||
      record.failureAt < failedAfterMs
    )
      return false;
    if (attempts.to > MAX_TRACKED_ATTEMPT) return false;
    for (let attempt = Math.max(1, attempts.from); attempt <= attempts.to; attempt += 1)
      if (record.failedAt[attempt] !== true) return false;
    return true;
  }

  /**
   * Whether this worker has an answer of `target` to a request at `attempt` (past MAX_TRACKED_ATTEMPT:
   * true, there is nothing to learn there).
   */
  heardAt(target: string, attempt: number): boolean {
    return attempt > MAX_TRACKED_ATTEMPT || this.targets.get(target)?.failedAt[attempt] !== undefined;
  }

  /** Succeeded slowly within the last quiet period: an attempt passing the threshold is no sign of trouble yet. */
  worksSlowly(target: string, nowMs: number): boolean {
    const at = this.targets.get(target)?.slowSuccessAt;
    return at !== undefined && nowMs - at < this.policy.quietPeriodMs;
  }

  private decide(target: string, record: TargetRecord, nowMs: number, succeeded: boolean): Transition | undefined {
    const from = record.state;
    const { abnormal } = record;
    const seen = record.results.length;
    if (from === 'healthy' && abnormal >= this.policy.degradeThreshold) this.open(record, nowMs);
    else if (from === 'degraded') {
      record.successes = succeeded ? record.successes + 1 : 0;
      if (record.successes >= record.required) this.close(record, nowMs, true);
      else if (abnormal <= this.policy.recoverThreshold && nowMs - record.lastAbnormalAt >= this.policy.quietPeriodMs)
        this.close(record, nowMs, false);
    }
    return record.state === from ? undefined : { target, from, to: record.state, abnormal, seen };
  }

  private open(record: TargetRecord, nowMs: number): void {
    const flapping = nowMs - record.closedAt < this.policy.quietPeriodMs;
    record.required = flapping ? Math.min(MAX_REQUIRED_SUCCESSES, record.required * 2) : 1;
    record.state = 'degraded';
    record.successes = 0;
  }

  /**
   * Closed by successes (or another worker's word), the window starts afresh, so the slow results that
   * opened the circuit do not open it again at once; closed by the seed's route, it is already down.
   */
  private close(record: TargetRecord, nowMs: number, afresh: boolean): void {
    Object.assign(record, { state: 'healthy', successes: 0, closedAt: nowMs });
    if (afresh) Object.assign(record, { results: [], next: 0, abnormal: 0 });
  }

  /**
   * Takes a state another worker detected. Degraded: the circuit opens now, and this worker's own probes
   * close it (their successes, as for a circuit it opened itself). Healthy: the window starts afresh, so
   * older slow results here do not open it again at once.
   */
  force(target: string, state: HealthState, nowMs: number): Transition | undefined {
    const record = this.touch(target, nowMs);
    const from = record.state;
    if (from === state) return undefined;
    if (state === 'degraded') {
      this.open(record, nowMs);
      record.lastAbnormalAt = nowMs;
    } else {
      this.close(record, nowMs, true);
      // Closed by another worker's probes: the target answered there.
      record.successAt = nowMs;
    }
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

  private touch(target: string, nowMs: number): TargetRecord {
    let record = this.targets.get(target);
    if (record) {
      this.targets.delete(target);
    } else {
      record = {
        state: 'healthy',
        results: [],
        next: 0,
        abnormal: 0,
        lastAbnormalAt: Number.NEGATIVE_INFINITY,
        successes: 0,
        required: 1,
        closedAt: Number.NEGATIVE_INFINITY,
        slowSuccessAt: Number.NEGATIVE_INFINITY,
        successAt: Number.NEGATIVE_INFINITY,
        failureAt: Number.NEGATIVE_INFINITY,
        failedAt: [],
      };
      if (this.targets.size >= this.policy.maxTargets) {
        this.evictOne();
        this.knownSince = Math.max(this.knownSince, nowMs);
      }
    }
    this.targets.set(target, record);
    return record;
  }

  /**
   * Forgets the least recently seen healthy target, else the least recently seen one. Many distinct
   * origins (a caller spraying URLs) must not push out an open circuit: forgetting it would send a
   * failing target's callbacks back at full concurrency. Degraded targets are few, so the scan is short.
   */
  private evictOne(): void {
    let victim: string | undefined;
    for (const [target, record] of this.targets) {
      victim ??= target;
      if (record.state === 'healthy') {
        victim = target;
        break;
      }
    }
    if (victim !== undefined) this.targets.delete(victim);
  }
}

/** Remembers the latest answer at `attempt` (none known: nothing to remember). */
function noteAttempt(record: TargetRecord, attempt: number | undefined, failed: boolean): void {
  if (attempt !== undefined && Number.isInteger(attempt) && attempt >= 1 && attempt <= MAX_TRACKED_ATTEMPT)
    record.failedAt[attempt] = failed;
}
