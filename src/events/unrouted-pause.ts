/**
 * Which outcome events are worth publishing. A routing key the broker returned as unroutable (no
 * queue bound for it on P.events) is skipped for `pauseMs`, then probed again with the next event.
 * The broker drops an unroutable message anyway, so skipping it loses nothing; it saves the worker
 * and the broker a publish per callback when nobody listens. A queue bound later gets events within
 * `pauseMs`.
 */
export class UnroutedPause {
  private readonly pausedUntil = new Map<string, number>();

  constructor(
    private readonly pauseMs: number,
    private readonly clock: () => number,
  ) {}

  /** False while `routingKey` is paused; true for the first event after a pause (the probe). */
  shouldPublish(routingKey: string): boolean {
    const until = this.pausedUntil.get(routingKey);
    if (until === undefined) return true;
    // Paused only while now is within pauseMs before `until`: a wall clock stepped back ends the pause.
    const left = until - this.clock();
    if (left > 0 && left <= this.pauseMs) return false;
    this.pausedUntil.delete(routingKey);
    return true;
  }

  /** The broker returned an event published with `routingKey`: nobody listens for it now. */
  returned(routingKey: string): void {
    this.pausedUntil.set(routingKey, this.clock() + this.pauseMs);
  }
}
