import { withTimeout } from '../util/with-timeout.js';

/** How long a declaration under way may hold a publish back: a fresh queues-mode topology takes seconds. */
export const DECLARATION_BOUND_MS = 60_000;

/** Finished declarations remembered for declaredMsSince: more than any one publish can overlap. */
const KEPT_INTERVALS = 32;

/**
 * Keeps a publisher's topology declarations out of its publishes' PUBLISH_TIMEOUT. A publish
 * waits for the topology to have been declared once before its own clock starts: a fresh queues-mode
 * topology (some 90 quorum queues, a stream and 800 bindings) takes 2–3 s on a loaded machine,
 * which is not the broker being slow to store a message. The wait is bounded twice: PUBLISH_TIMEOUT
 * while no declaration is under way (no broker answers), DECLARATION_BOUND_MS while one is.
 *
 * Every reconnect declares the topology again on the channel before it carries anything (some 900
 * idempotent steps in queues mode, seconds under load): a cancel marker sent as the connection was
 * cut waits for that too. declaredMsSince tells how much of a wait was declaring, so such a wait
 * can leave it out of its PUBLISH_TIMEOUT.
 */
export class DeclarationGate {
  private declared = false;
  private running: Promise<void> | undefined;
  private runningSince = 0;
  private readonly intervals: Array<[number, number]> = [];
  private changed: Promise<void>;
  private signal: () => void = () => {};

  constructor() {
    this.changed = this.nextChange();
  }

  /** Whether the topology has been declared once: publishes then go straight on. */
  get isDeclared(): boolean {
    return this.declared;
  }

  /** Runs one declaration (a channel setup's) and resolves or rejects as it does. */
  async track(declaration: Promise<void>): Promise<void> {
    this.running = declaration.catch(() => {});
    this.runningSince = Date.now();
    this.notify();
    try {
      await declaration;
      this.declared = true;
    } finally {
      this.intervals.push([this.runningSince, Date.now()]);
      if (this.intervals.length > KEPT_INTERVALS) this.intervals.shift();
      this.running = undefined;
      this.notify();
    }
  }

  /** Milliseconds spent declaring between `since` (a Date.now() value) and now, a declaration under way included. */
  declaredMsSince(since: number): number {
    const now = Date.now();
    const spans = this.running ? [...this.intervals, [this.runningSince, now] as [number, number]] : this.intervals;
    let total = 0;
    for (const [start, end] of spans) total += Math.max(0, Math.min(end, now) - Math.max(start, since));
    return total;
  }

  /** Resolves once the topology has been declared, or rejects with `timeout()` as the class says. */
  async wait(publishTimeoutMs: number, timeout: () => Error): Promise<void> {
    const until = Date.now() + publishTimeoutMs;
    while (!this.declared) {
      if (this.running) {
        await withTimeout(this.running, DECLARATION_BOUND_MS, timeout);
        continue;
      }
      const remaining = until - Date.now();
      if (remaining <= 0) throw timeout();
      await withTimeout(this.changed, remaining, timeout);
    }
  }

  private nextChange(): Promise<void> {
    return new Promise<void>((resolve) => (this.signal = resolve));
  }

  private notify(): void {
    this.signal();
    this.changed = this.nextChange();
  }
}
