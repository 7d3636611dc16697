/**
 * A token bucket: `ratePerSecond` tokens a second up to `capacity`; a request takes one. Pure: the
 * caller passes the time. Tokens are fractional, so a worker's share of a small fleet-wide rate
 * (0.25/s for 1/s over 4 workers) is kept exactly.
 */
export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private ratePerSecond: number,
    private capacity: number,
    nowMs: number,
  ) {
    this.tokens = capacity;
    this.at = nowMs;
  }

  /** A new rate or capacity from now on; the tokens held are kept, up to the new capacity. */
  reshape(ratePerSecond: number, capacity: number, nowMs: number): void {
    this.refill(nowMs);
    this.ratePerSecond = ratePerSecond;
    this.capacity = capacity;
    this.tokens = Math.min(this.tokens, capacity);
  }

  /** Whether a request may go now. */
  available(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= 1;
  }

  /** A request went: one token taken (the bucket may go below one, never below zero). */
  take(nowMs: number): void {
    this.refill(nowMs);
    this.tokens = Math.max(0, this.tokens - 1);
  }

  /** How long until a request may go (0: now). */
  msUntilToken(nowMs: number): number {
    this.refill(nowMs);
    if (this.tokens >= 1) return 0;
    return Math.ceil(((1 - this.tokens) * 1_000) / this.ratePerSecond);
  }

  private refill(nowMs: number): void {
    // A clock that steps back adds nothing and takes nothing.
    if (nowMs > this.at) this.tokens = Math.min(this.capacity, this.tokens + ((nowMs - this.at) * this.ratePerSecond) / 1_000);
    this.at = Math.max(this.at, nowMs);
  }
}
