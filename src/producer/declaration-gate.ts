import { withTimeout } from '../util/with-timeout.js';

/** How long a declaration under way may hold a publish back: a fresh queues-mode topology takes seconds. */
export const DECLARATION_BOUND_MS = 60_000;

/**
 * Keeps a publisher's first topology declaration out of its publishes' PUBLISH_TIMEOUT. A publish
 * waits for the topology to have been declared once before its own clock starts: a fresh queues-mode
 * topology (35 quorum queues, a stream and some 1,700 bindings) takes 2–3 s on a loaded machine,
 * which is not the broker being slow to store a message. The wait is bounded twice: PUBLISH_TIMEOUT
 * while no declaration is under way (no broker answers), DECLARATION_BOUND_MS while one is.
 */
export class DeclarationGate {
  private declared = false;
  private running: Promise<void> | undefined;
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
    this.notify();
    try {
      await declaration;
      this.declared = true;
    } finally {
      this.running = undefined;
      this.notify();
    }
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
