/*
 * The pipeline's two timers: the sweep that looks for callbacks to move out of their lanes, and the
 * wake of a target its limit holds back. Both are unref'd: neither keeps a stopping worker alive.
 */

/** How often the worker looks for busy targets whose excess should leave their lanes. */
const SWEEP_EVERY_MS = 50;

/** The share of the time since its last call that this process's event loop was busy (0–1). */
function loopUtilisation(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    return utilization;
  };
}

/** Calls `sweep` every SWEEP_EVERY_MS with the event loop's busy share since the sweep before, until stopped. */
export class Sweeper {
  private readonly timer: NodeJS.Timeout;

  constructor(sweep: (loopBusy: () => number) => void) {
    const loopBusy = loopUtilisation();
    this.timer = setInterval(() => sweep(loopBusy), SWEEP_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** One pending wake for the targets held back by their limits (docs/limits.md): one timer, for the soonest. */
export class LimitWake {
  private wake: { at: number; timer: NodeJS.Timeout } | undefined;

  constructor(private readonly onWake: () => void) {}

  /** Wakes in `inMs` (undefined: no target waits on time), unless a wake as soon or sooner is set. */
  after(inMs: number | undefined, nowMs: number): void {
    if (inMs === undefined) return;
    const at = nowMs + inMs;
    if (this.wake !== undefined && this.wake.at <= at) return;
    clearTimeout(this.wake?.timer);
    const timer = setTimeout(
      () => {
        this.wake = undefined;
        this.onWake();
      },
      Math.max(1, inMs),
    );
    timer.unref();
    this.wake = { at, timer };
  }

  stop(): void {
    clearTimeout(this.wake?.timer);
  }
}
