import { EventEmitter } from 'node:events';

/** Reports an attempt overdue once it outlasts the slow threshold (isolation's early warning). */
export interface SlowWatch {
  afterMs: number;
  onSlow: () => void;
}

/**
 * The one timer of an HTTP attempt, and the abort signal undici watches. With a slow watch it first
 * fires at the slow threshold, so a hanging target is reported after SLOW_THRESHOLD rather than
 * HTTP_TIMEOUT, then re-arms for the rest of the timeout; at the timeout it aborts the request. It is
 * cleared the moment the attempt ends: `AbortSignal.timeout()` would leave a timer armed for the
 * whole HTTP_TIMEOUT after every attempt, hundreds of thousands of them at full speed. It is an
 * EventEmitter, which undici accepts as a signal, because an AbortSignal's EventTarget machinery
 * costs several times more per attempt.
 */
export class AttemptDeadline extends EventEmitter {
  /** True once the timeout passed; `reason` is then a `TimeoutError`. */
  aborted = false;
  reason: Error | undefined;
  private timer: NodeJS.Timeout;
  private overdue = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly slow: SlowWatch | undefined,
  ) {
    super();
    this.timer =
      slow && slow.afterMs < timeoutMs ? setTimeout(() => this.markSlow(), slow.afterMs) : setTimeout(() => this.expire(), timeoutMs);
  }

  /** Stops the timer; true when the attempt outlasted the slow threshold. */
  finish(): boolean {
    clearTimeout(this.timer);
    return this.overdue;
  }

  private markSlow(): void {
    const slow = this.slow as SlowWatch;
    this.overdue = true;
    this.timer = setTimeout(() => this.expire(), this.timeoutMs - slow.afterMs);
    slow.onSlow();
  }

  private expire(): void {
    this.aborted = true;
    this.reason = new DOMException(`no complete answer within ${this.timeoutMs}ms`, 'TimeoutError');
    this.emit('abort');
  }
}
