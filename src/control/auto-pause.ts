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
  /** Origin → when its current failure streak began (ms). A Map iterates in insertion order. */
  private readonly streaks = new Map<string, number>();

  constructor(
    private readonly afterMs: number,
    private readonly maxOrigins = 10_000,
  ) {}

  /**
   * Records an attempt's result for `origin`. True exactly once per streak: when the attempts to it have
   * all failed for at least `afterMs`; the streak then starts over (a resumed target gets the full time
   * again).
   */
  record(origin: string, succeeded: boolean, nowMs: number): boolean {
    if (succeeded) {
      this.streaks.delete(origin);
      return false;
    }
    const since = this.streaks.get(origin);
    if (since === undefined) {
      this.streaks.set(origin, nowMs);
      if (this.streaks.size > this.maxOrigins) this.streaks.delete(this.streaks.keys().next().value as string);
      return false;
    }
    if (nowMs - since < this.afterMs) return false;
    this.streaks.delete(origin);
    return true;
  }

  /** Origins with a failure streak under way. */
  get size(): number {
    return this.streaks.size;
  }
}
