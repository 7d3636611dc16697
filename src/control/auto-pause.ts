/**
 * AUTO_PAUSE_AFTER: pause a target fleet-wide once every attempt to it has failed for that long, as
 * hosted webhook services disable an endpoint after sustained failure. A paused target's callbacks are
 * held without spending attempts until an operator resumes it (`callback-relay target resume`), so a
 * receiver that is down for a day does not drain its callbacks' attempt budgets into the DLQ.
 *
 * Pure and bounded: a failure streak per origin (first failure, reset by any success), at most
 * `maxOrigins` of them (the oldest streak is forgotten first); the caller passes the time.
 */
export class AutoPause {
  /** Origin → when its current failure streak began (ms) and its failed attempts. A Map iterates in insertion order. */
  private readonly streaks = new Map<string, { since: number; failures: number }>();

  /** `minFailures`: a streak of fewer failed attempts never pauses, however long (sparse traffic is thin evidence). */
  constructor(
    private readonly afterMs: number,
    private readonly maxOrigins = 10_000,
    private readonly minFailures = 5,
  ) {}

  /**
   * Records an attempt's result for `origin`. True exactly once per streak: when the attempts to it have
   * all failed for at least `afterMs`, `minFailures` of them at least; the streak then starts over (a
   * resumed target gets the full time again).
   */
  record(origin: string, succeeded: boolean, nowMs: number): boolean {
    if (succeeded) {
      this.streaks.delete(origin);
      return false;
    }
    const streak = this.streaks.get(origin);
    if (streak === undefined) {
      this.streaks.set(origin, { since: nowMs, failures: 1 });
      if (this.streaks.size > this.maxOrigins) this.streaks.delete(this.streaks.keys().next().value as string);
      return false;
    }
    streak.failures += 1;
    if (nowMs - streak.since < this.afterMs || streak.failures < this.minFailures) return false;
    this.streaks.delete(origin);
    return true;
  }

  /** Origins with a failure streak under way. */
  get size(): number {
    return this.streaks.size;
  }
}
