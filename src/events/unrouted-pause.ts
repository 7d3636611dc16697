/**
 * Which outcome events are worth publishing. A routing key the broker returned as unroutable (no
 * queue bound for it on P.events) is skipped for `pauseMs`; then one event goes out as a probe, and
 * the key stays skipped while the probe may still come back (`probeWaitMs`). A returned probe pauses
 * it again; a probe not returned by then means a queue is bound, and every event goes out. The
 * broker drops an unroutable message anyway, so skipping it loses nothing; it saves the worker and
 * the broker a publish per callback when nobody listens. A queue bound later gets events within
 * `pauseMs` + `probeWaitMs`.
 *
 * Without the probe's wait, every event after a pause went out until the probe's return arrived, a
 * round trip later: at thousands of callbacks a second on a loaded broker, a burst each second that
 * cost a saturated worker a large share of its rate against EVENTS=off (docs/events-and-history.md).
 */
export class UnroutedPause {
  /** Per routing key: skipped until `until`; `probing` once the probe after a pause went out. */
  private readonly skipped = new Map<string, { until: number; probing: boolean }>();

  constructor(
    private readonly pauseMs: number,
    private readonly clock: () => number,
    private readonly probeWaitMs = pauseMs,
  ) {}

  /** False while `routingKey` is paused or its probe may still come back; true for the probe itself. */
  shouldPublish(routingKey: string): boolean {
    const skip = this.skipped.get(routingKey);
    if (skip === undefined) return true;
    // Skipped only while now is within the window before `until`: a wall clock stepped back ends it.
    const now = this.clock();
    const left = skip.until - now;
    if (left > 0 && left <= Math.max(this.pauseMs, this.probeWaitMs)) return false;
    if (skip.probing) {
      // The probe was not returned: a queue is bound for this key.
      this.skipped.delete(routingKey);
      return true;
    }
    this.skipped.set(routingKey, { until: now + this.probeWaitMs, probing: true });
    return true;
  }

  /** The broker returned an event published with `routingKey`: nobody listens for it now. */
  returned(routingKey: string): void {
    this.skipped.set(routingKey, { until: this.clock() + this.pauseMs, probing: false });
  }
}
